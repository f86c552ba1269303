"""The Store contract: what every backend (SQLite, OpenSearch) must do, aggregate by aggregate.

Above this module sit the services (``workers.jobs`` writes, ``search.recall`` reads); below it,
one implementation per backend, chosen by URL in :func:`search.open_store` and nowhere else.
The docstrings here are the contract and ``tests/contract`` checks each clause on every backend.

Rules every implementation follows:

- Calls are synchronous and thread-safe: FastAPI runs routes in a threadpool, workers are sync.
- Timestamps go in and come out tz-aware UTC.
- Filters (scopes, states, types, tags, dates) are applied **inside** the engine query, never
  after it: a memory outside ``SearchFilter.scopes`` must never leave the store.
- Search legs return raw scores, higher is better; fusion is the core's job (:mod:`hivemem.fusion`).
- Driver errors are translated to :mod:`hivemem.errors` classes at the boundary, every one of
  them: a caller never sees a driver's exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from hivemem.audit import AuditQuery
from hivemem.errors import DuplicateMemoryError, MemoryNotFoundError
from hivemem.fusion import Candidate
from hivemem.knowledge import KnowledgeChunk, KnowledgeSource
from hivemem.model import AuditEvent, DuplicatePolicy, Memory, MemoryState, MemoryType, Relation
from hivemem.resolution import Resolution
from hivemem.tokens import TokenRecord

__all__ = [
    "DEFAULT_STATES",
    "ChunkFilter",
    "KnowledgeStore",
    "MemoryStore",
    "PageMark",
    "RelationStore",
    "SearchFilter",
    "SourceChunks",
    "Store",
    "TokenStore",
    "missing_end",
    "not_written",
]

DEFAULT_STATES: tuple[MemoryState, ...] = (MemoryState.WORKING, MemoryState.CONSOLIDATED)


@dataclass(frozen=True, slots=True)
class PageMark:
    """Where a page of a listing ended: its last memory's ``created_at`` and id."""

    created_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which memories a search may return. Every field narrows; empty ``tags``/``memory_types`` mean any.

    ``scopes`` is required and never empty: there is no "search everything" for a caller.
    ``tags`` matches memories that carry at least one of the tags.
    """

    scopes: Sequence[str]
    states: Sequence[MemoryState] = DEFAULT_STATES
    memory_types: Sequence[MemoryType] = ()
    tags: Sequence[str] = ()
    created_after: datetime | None = None
    created_before: datetime | None = None
    exclude_ids: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.scopes:
            raise ValueError("SearchFilter.scopes must name at least one scope")


class MemoryStore(Protocol):
    """The memories aggregate: memories with their vectors, written, resolved, read and searched."""

    def put(self, memory: Memory, policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> bool:
        """Write ``memory`` (with its embedding). Returns True if written.

        An existing id is handled by ``policy``: FAIL raises ``DuplicateMemoryError``, SKIP writes
        nothing and returns False, OVERWRITE and UPDATE replace the whole memory. UPDATE writes
        nothing and returns False when no memory has the id (it was forgotten since it was read):
        the check and the write are one step, so a forget that has answered is never undone. An embedding whose length
        is not ``dimension`` raises ``EmbeddingMismatchError``; a memory without one is stored and
        found only by keyword search.
        """
        ...

    def put_many(self, memories: Sequence[Memory], policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> int:
        """:meth:`put` for a batch (an import), written together and visible once it returns; how
        many were written (under UPDATE, the ids no longer there are not, and raise nothing). What
        ``put`` would refuse (an id that exists, under FAIL; a content its scope holds under another
        id, under any policy) is not written, and ``DuplicateMemoryError`` is raised once the
        others are."""
        ...

    def write_resolved(self, incoming: Memory, decide: Callable[[Memory | None], Resolution]) -> Resolution:
        """Atomically resolve and write one incoming memory; returns ``decide``'s resolution.

        Looks up the memory holding ``incoming``'s content hash in its scope, calls ``decide`` with
        it (or None) and writes the memory ``decide`` returns: inserted when its id is new, replacing
        the stored one otherwise. Calls for the same scope and content are serialized with each
        other and with every other write, across threads and processes, so no update is lost.
        """
        ...

    def write_resolved_many(
        self, incoming: Sequence[Memory], decide: Callable[[Memory, Memory | None], Resolution]
    ) -> list[Resolution]:
        """``write_resolved`` for each memory in order, ``decide(incoming, held)`` for each; one
        resolution per memory. A later memory of the batch sees the earlier ones' writes (a repeated
        content reinforces its first copy). Backends write the batch as one unit where they can (one
        SQLite transaction; bulk requests and one refresh on OpenSearch)."""
        ...

    def get(self, memory_id: str) -> Memory:
        """The memory with that id, embedding included. Raises ``MemoryNotFoundError``."""
        ...

    def get_many(self, memory_ids: Sequence[str], *, vectors: bool = True) -> list[Memory]:
        """The memories with those ids, in the order asked; unknown ids are left out. ``vectors=False``
        leaves each ``embedding`` None, unread: recall needs none, and turning 384 floats a row into
        Python floats was the largest single piece of its Python work."""
        ...

    def find_by_hash(self, scope: str, content_hash: str) -> Memory | None:
        """The memory in ``scope`` (any state) whose content hash is ``content_hash``, if any."""
        ...

    def held_contents(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of ``keys`` (scope, content hash) a stored memory holds, in any state: what a
        batch need not embed, asked in one read where a remote store would answer one per key."""
        ...

    def thread_neighbours(self, memory_ids: Sequence[str], window: int) -> dict[str, list[tuple[str, int]]]:
        """For each of ``memory_ids`` in a thread, the memories up to ``window`` places before and
        after it in that thread of its scope, each with its distance (1: adjacent), nearest first
        on each side. A thread is ordered by ``created_at``, then id; every state counts. Ids that
        are unknown or in no thread are left out.
        """
        ...

    def delete(self, memory_id: str) -> Memory:
        """Remove the memory and its relations for good; return what was removed.

        Raises ``MemoryNotFoundError``. Callers record an :class:`AuditEvent` (see ``audit``).
        """
        ...

    def count(self, scopes: Sequence[str] | None = None) -> int:
        """How many memories the store holds (in ``scopes`` when given), every state counted."""
        ...

    def list_memories(
        self,
        where: SearchFilter,
        limit: int,
        *,
        authors: Sequence[str] = (),
        after: PageMark | None = None,
        vectors: bool = True,
    ) -> list[Memory]:
        """The memories ``where`` admits, newest first (``created_at``, then id), at most ``limit``;
        with their vectors unless ``vectors`` is False (a vector is most of a memory's bytes, and a
        listing, a status or an id scan reads none). ``authors``: only theirs; ``after``: only
        those that come after that memory in this order (the next page)."""
        ...

    def scopes(self) -> list[str]:
        """Every scope that holds a memory, sorted."""
        ...

    def tally(self, scopes: Sequence[str]) -> dict[tuple[MemoryType, MemoryState], int]:
        """How many memories of ``scopes`` there are of each type and state (absent pairs: none)."""
        ...

    def tally_by_scope(self) -> dict[str, dict[tuple[MemoryType, MemoryState], int]]:
        """:meth:`tally` of every scope that holds a memory, by scope, in one read."""
        ...

    def keyword_search(self, text: str, where: SearchFilter, limit: int) -> list[Candidate]:
        """BM25 over title, content and tags, best first, at most ``limit``; a text with no
        searchable word returns []. Scores are the engine's BM25, higher is better."""
        ...

    def vector_search(self, vector: Sequence[float], where: SearchFilter, limit: int) -> list[Candidate]:
        """Nearest memories by cosine similarity to ``vector``, best first, at most ``limit``.

        A score is the cosine to within 1e-3: a store may score from a compressed copy of the vectors
        (SQLite's float16 index). Raises ``EmbeddingMismatchError`` when ``len(vector) != dimension``.
        """
        ...

    def record_access(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Bump ``access_count`` and set ``last_accessed_at`` of those memories; unknown ids are ignored."""
        ...


class RelationStore(Protocol):
    """The relations and audit aggregate: edges between memories, and the append-only audit trail."""

    def add_relation(self, relation: Relation) -> None:
        """Store an edge (idempotent on source, target and type). Raises ``MemoryNotFoundError``
        when either end does not exist."""
        ...

    def add_relations(self, relations: Sequence[Relation]) -> None:
        """:meth:`add_relation` for many edges in one write (an import's); none is stored when an
        end of one is missing (``MemoryNotFoundError``)."""
        ...

    def relations(self, memory_id: str) -> list[Relation]:
        """Every edge that starts or ends at ``memory_id``, oldest first."""
        ...

    def relations_of(self, memory_ids: Sequence[str]) -> list[Relation]:
        """Every edge that starts or ends at one of ``memory_ids``, each once, oldest first: one
        read for many memories (a recall's results, a page of an export), where a remote store
        would otherwise answer one request per memory."""
        ...

    def audit(self, event: AuditEvent) -> None:
        """Append an audit record; records outlive the memories they name."""
        ...

    def audit_many(self, events: Sequence[AuditEvent]) -> None:
        """Append many audit records, in their order, in one write."""
        ...

    def audit_log(self, memory_id: str | None = None) -> list[AuditEvent]:
        """Audit records, oldest first, for one memory or all, each with its ``id``."""
        ...

    def audit_event(self, event_id: str) -> AuditEvent:
        """One audit record by its ``id``. Raises ``AuditNotFoundError``."""
        ...

    def audit_search(self, query: AuditQuery) -> list[AuditEvent]:
        """The audit records ``query`` selects, newest first, at most ``query.limit``."""
        ...

    def remove_relation(self, relation: Relation) -> bool:
        """Remove the edge of ``relation``'s source, target and type; False when there was none."""
        ...


@dataclass(frozen=True, slots=True)
class ChunkFilter:
    """Which chunks a knowledge search may return: those of ``scopes``, of one document when ``uri`` is set."""

    scopes: Sequence[str]
    uri: str | None = None

    def __post_init__(self) -> None:
        if not self.scopes:
            raise ValueError("ChunkFilter.scopes must name at least one scope")


SourceChunks = tuple[KnowledgeSource, Sequence[KnowledgeChunk]]
"""A document to store: its source record and exactly its chunks."""


class KnowledgeStore(Protocol):
    """The knowledge aggregate: indexed documents (sources) and their chunks, searched like memories.

    A source is keyed by (scope, uri). Its chunks are written and replaced only as a whole set,
    with the source record, in one unit: a reader sees a document's old chunks or its new ones.
    """

    def replace_source(self, source: KnowledgeSource, chunks: Sequence[KnowledgeChunk]) -> None:
        """Store ``source`` with exactly ``chunks`` (each with its embedding, or none), replacing
        whatever that (scope, uri) held, atomically. Raises ``EmbeddingMismatchError`` for a
        vector whose length is not ``dimension``; nothing is written then."""
        ...

    def replace_sources(self, documents: Sequence[SourceChunks]) -> None:
        """:meth:`replace_source` for each (source, chunks), in as few writes as the backend can
        (a bulk ingest's batch): each document is replaced atomically, as one would be; every vector
        is checked before anything is written. A later pair for the same (scope, uri) wins."""
        ...

    def record_source_error(self, source: KnowledgeSource) -> None:
        """Record a failed attempt to index ``source`` (its ``last_error`` and ``fetched_at``).
        A document indexed before keeps its chunks; an unknown one is recorded with none."""
        ...

    def get_source(self, scope: str, uri: str) -> KnowledgeSource | None:
        """The source of (scope, uri), if any."""
        ...

    def sources(self, scopes: Sequence[str]) -> list[KnowledgeSource]:
        """Every source in ``scopes``, by scope then uri."""
        ...

    def source_scopes(self) -> list[str]:
        """Every scope that holds a source, sorted (an export of every scope reads it)."""
        ...

    def delete_source(self, scope: str, uri: str) -> KnowledgeSource:
        """Remove a source and its chunks; return what was removed. Raises ``SourceNotFoundError``."""
        ...

    def delete_sources(self, scope: str, uris: Sequence[str]) -> list[KnowledgeSource]:
        """Remove the sources of ``scope`` that ``uris`` name, with their chunks, in a few requests
        whatever their number (a prune of a folder gone whole); return those removed, in the order
        asked, leaving out any not indexed (or named twice)."""
        ...

    def source_chunks(self, scope: str, uri: str) -> list[KnowledgeChunk]:
        """The chunks of one source in reading order, embeddings included; [] for an unknown one."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[KnowledgeChunk]:
        """The chunks with those ids, in the order asked, embeddings left out; unknown ids are left out."""
        ...

    def chunk_keyword_search(self, text: str, where: ChunkFilter, limit: int) -> list[Candidate]:
        """BM25 over chunk text, section path and document title, best first (ties by id);
        [] for a text without a searchable word."""
        ...

    def chunk_vector_search(self, vector: Sequence[float], where: ChunkFilter, limit: int) -> list[Candidate]:
        """Nearest chunks by cosine, best first (ties by id). Raises ``EmbeddingMismatchError``
        when ``len(vector) != dimension``."""
        ...

    def scan_chunks(self, where: ChunkFilter) -> Iterator[KnowledgeChunk]:
        """Every chunk passing ``where``, by scope, uri and ordinal, without embeddings (for ``match``)."""
        ...


class TokenStore(Protocol):
    """The team server's tokens: records of who holds one and what it may do, never the token itself."""

    def put_token(self, record: TokenRecord) -> None:
        """Store a new token record. Raises ``DuplicateMemoryError`` if its id exists (ids are random)."""
        ...

    def get_token(self, token_id: str) -> TokenRecord | None:
        """The record with that id, revoked and expired ones included; None if there is none.

        Read from the store on every call (no cache), so a revocation counts from the next request.
        """
        ...

    def tokens(self) -> list[TokenRecord]:
        """Every token record, oldest first."""
        ...

    def revoke_token(self, token_id: str, at: datetime) -> TokenRecord:
        """Mark a token revoked at ``at`` (a revoked one keeps its first revocation time).

        Raises ``TokenNotFoundError`` for an unknown id.
        """
        ...


class Store(MemoryStore, RelationStore, KnowledgeStore, TokenStore, Protocol):
    """A durable home for memories, their vectors, relations, audit records and knowledge."""

    @property
    def embedding_model(self) -> str:
        """The embedding model id this store was built with."""
        ...

    @property
    def dimension(self) -> int:
        """The vector dimension this store was built with."""
        ...

    def check(self) -> None:
        """Return when the store can serve; cheap enough for every readiness probe.

        Raises ``StoreUnavailableError`` when it cannot be reached, and ``StoreCorruptError`` once
        its data was found damaged (a damaged store refuses every write until it is repaired).
        """
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...

    def drop(self) -> None:
        """Delete everything this store holds (the file, the index). For tests and resets."""
        ...


def missing_end(relations: Sequence[Relation], found: set[str]) -> None:
    """Raise ``MemoryNotFoundError`` for the first of ``relations`` with an end not in ``found``."""
    for relation in relations:
        if relation.source_id not in found or relation.target_id not in found:
            raise MemoryNotFoundError(f"relation {relation.source_id} -> {relation.target_id}: missing end")


def not_written(memory_ids: Sequence[str]) -> DuplicateMemoryError:
    """The error :meth:`MemoryStore.put_many` raises for the memories of a batch it refused."""
    return DuplicateMemoryError(
        f"{len(memory_ids)} memories were not written (the id exists, or the scope holds the content "
        f"under another id): {list(memory_ids)[:5]}"
    )
