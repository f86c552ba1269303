"""What a store may do beyond the contract (:mod:`search.base`): optional capabilities, each a
runtime-checkable protocol that the services use when a store has it and do without otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hivemem.errors import EmbeddingMismatchError
from hivemem.fusion import Candidate
from hivemem.knowledge import KnowledgeChunk
from hivemem.model import FusionMethod, Memory
from hivemem.resolution import Neighbour, Resolution
from search.base import SearchFilter

__all__ = [
    "SLEEP_LOCK_S",
    "FusesNatively",
    "KeepsSecondVectors",
    "LeasesSleep",
    "LegQuery",
    "Legs",
    "PlanDecision",
    "ReEmbeds",
    "ReembedBatch",
    "ResolvesByMeaning",
    "ScalesBM25",
    "SearchesLegsTogether",
    "Warms",
    "refuse_stale_vectors",
]


@runtime_checkable
class ScalesBM25(Protocol):
    """A store whose BM25 scores are on another scale than Lucene's current BM25 (SQLite's FTS5, and
    OpenSearch 2.x's legacy BM25): recall reads a small scope's BM25 leg on its own scale
    (``bm25_half_score``, in the current BM25's units), so the stores must agree on what a score is
    worth."""

    @property
    def bm25_scale(self) -> float:
        """This store's BM25 score of a match, over Lucene's for the same match (about)."""
        ...


@runtime_checkable
class Warms(Protocol):
    """A store with in-process state worth loading before the first request (the SQLite vector index)."""

    def warm(self) -> None:
        """Load it now."""
        ...


SLEEP_LOCK_S = 3600
"""How long a sleep lock outlives a holder that died (longer than a pass takes): the broker's
lock expires after it, a store's lease is taken over after it."""


@runtime_checkable
class LeasesSleep(Protocol):
    """A store that processes on several machines may serve, which holds the lock of its sleep
    passes itself: one process at a time consolidates and archives, wherever it runs."""

    def sleep_lease(self, *, wait: bool) -> AbstractContextManager[bool]:
        """Whether the block holds the lease: with ``wait``, always, once another pass has ended;
        without, only if none runs now. A holder that died keeps it ``SLEEP_LOCK_S`` at most."""
        ...


@dataclass(frozen=True, slots=True)
class LegQuery:
    """One query's legs: ``text`` for BM25 and ``vector`` for k-NN; None skips that leg."""

    text: str | None
    vector: Sequence[float] | None


@dataclass(frozen=True, slots=True)
class Legs:
    """One query's candidates per leg, as ``keyword_search``/``vector_search`` would return them; None if not run."""

    keyword: list[Candidate] | None
    vector: list[Candidate] | None


@runtime_checkable
class SearchesLegsTogether(Protocol):
    """A store that runs every leg of several queries in one round trip."""

    def search_legs(self, queries: Sequence[LegQuery], where: SearchFilter, limit: int) -> list[Legs]:
        """For each query, in order, the legs it asks for, each exactly as the single-leg methods answer."""
        ...


# decide(incoming, memory holding its content hash or None, nearest memories of its scope)
PlanDecision = Callable[[Memory, Memory | None, Sequence[Neighbour]], Resolution]


@runtime_checkable
class ResolvesByMeaning(Protocol):
    """A store that resolves a write against the nearest memories of its scope, not only the exact
    content, and applies the resulting plan as one unit."""

    def write_planned(self, incoming: Sequence[Memory], decide: PlanDecision, *, neighbours: int) -> list[Resolution]:
        """Resolve and write each memory in order, as one unit serialized with every other write.

        ``decide`` gets each memory, the memory holding its content hash in its scope (or None) and
        the ``neighbours`` nearest memories of its scope (any state) with their cosines; earlier
        memories of the batch count, as written. Every memory of each plan (``Resolution.writes``)
        is inserted or replaced, and its relations and audit records written, in the same unit.
        """
        ...


@dataclass(frozen=True, slots=True)
class ReembedBatch:
    """Memories and chunks whose vectors for the new model are not staged yet."""

    memories: list[Memory]
    chunks: list[KnowledgeChunk]

    def __len__(self) -> int:
        return len(self.memories) + len(self.chunks)


def refuse_stale_vectors(memories: Iterable[Memory], model: str) -> None:
    """Raise ``EmbeddingMismatchError`` for a memory whose vector is of another model than ``model``,
    the store's: one embedded before a re-embed moved the store to a new model."""
    for memory in memories:
        if memory.embedding is not None and memory.embedding_model not in ("", model):
            raise EmbeddingMismatchError(
                f"memory {memory.id} was embedded with {memory.embedding_model!r}, but the store now holds "
                f"{model!r} vectors (it was re-embedded meanwhile); write it again"
            )


@runtime_checkable
class ReEmbeds(Protocol):
    """A store that moves every vector to another embedding model while it serves the old ones.

    New vectors are staged beside the old (:meth:`reembed_pending` then :meth:`reembed_stage`, as
    often as it takes); :meth:`reembed_swap` then makes them the store's in one step, unless a write
    since left something unstaged. Until the swap, reads and writes use the old model.
    """

    def reembed_remaining(self, model: str) -> int:
        """How many memories and chunks have no staged vector for ``model`` yet."""
        ...

    def reembed_pending(self, model: str, limit: int) -> ReembedBatch:
        """Up to ``limit`` memories and chunks without a staged vector for ``model`` (a memory whose
        content changed since its vector was staged counts again)."""
        ...

    def reembed_stage(
        self,
        model: str,
        dimension: int,
        memories: Sequence[tuple[Memory, Sequence[float]]],
        chunks: Sequence[tuple[KnowledgeChunk, Sequence[float]]],
    ) -> None:
        """Stage vectors of ``model`` (``dimension`` long) for these memories and chunks."""
        ...

    def reembed_swap(self, model: str, dimension: int) -> bool:
        """Make the staged vectors the store's, and ``model`` its model, atomically with respect to
        writes; False (nothing changed) when a memory or chunk is still without one."""
        ...


@runtime_checkable
class KeepsSecondVectors(Protocol):
    """A store that keeps a second model's vector of every memory beside the first's, for recall's
    second dense leg (:mod:`workers.second_model` fills them; :mod:`search.recall` reads them).

    A vector counts for the memory's content it was made from: a memory whose content changed since
    is pending again and scores nothing until it has a new one; a deleted memory's go with it.
    """

    def second_vectors_pending(self, model: str, limit: int) -> list[Memory]:
        """Up to ``limit`` memories without a current ``model`` vector. The store may remember how far
        it looked: a memory it named is not named again unless it changes or :meth:`second_vectors_rescan`
        is called, so a caller that fails to store what it was given rescans."""
        ...

    def second_vectors_rescan(self, model: str) -> None:
        """Forget how far :meth:`second_vectors_pending` looked: its next call looks at every memory."""
        ...

    def second_vectors_keep_only(self, model: str) -> int:
        """Drop the vectors of every other second model (one that is no longer configured); how many."""
        ...

    def second_vectors_remaining(self, model: str) -> int:
        """How many memories have no current ``model`` vector (a full count; for progress reports)."""
        ...

    def put_second_vectors(self, model: str, dimension: int, vectors: Sequence[tuple[Memory, Sequence[float]]]) -> None:
        """Keep these ``model`` vectors (``dimension`` long), each for its memory's content as given;
        a memory deleted meanwhile keeps none."""
        ...

    def second_vector_scores(self, model: str, vector: Sequence[float], memory_ids: Sequence[str]) -> list[Candidate]:
        """The cosine of ``vector`` with the current ``model`` vector of each of ``memory_ids`` that has
        one, best first (ties by id). Filters are the caller's: these ids passed them in the other legs."""
        ...


@runtime_checkable
class FusesNatively(Protocol):
    """A store that can fuse BM25 and k-NN in the engine (OpenSearch ``hybrid`` + search pipeline)."""

    def native_hybrid(
        self, text: str, vector: Sequence[float], where: SearchFilter, limit: int, *, fusion: FusionMethod
    ) -> list[Candidate] | None:
        """Fused candidates, best first: min-max scores in [0, 1], or unweighted RRF sums. None when the
        store is not configured for native fusion or cannot run it for this input."""
        ...
