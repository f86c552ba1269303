"""The Embedder contract, and a deterministic hashing embedder for tests and model-free runs."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder", "HashEmbedder", "ReleasesWorkMemory", "RunsInParallel", "parallel_calls", "release_work_memory"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of a fixed dimension.

    Implementations MUST return one vector of length ``dimension`` per input text, in order,
    each of unit length (so a dot product is the cosine). ``model_id`` names the model and is
    recorded by the store: a store built with one model refuses to open with another.
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the model (folder name or hub id plus dimension)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts being stored."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for recall queries (some models want a different prefix than for passages)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for document chunks: passages read through the model's document window, which
        is longer than a memory's (a chunk of 1,200 characters runs to about 300 tokens)."""
        ...


@runtime_checkable
class RunsInParallel(Protocol):
    """An embedder whose calls may run at once from several threads, each on a core of its own."""

    @property
    def parallel_calls(self) -> int:
        """How many calls at once use the machine well."""
        ...


def parallel_calls(embedder: Embedder) -> int:
    """How many calls of ``embedder`` to run at once: what it says, else one."""
    return max(1, embedder.parallel_calls) if isinstance(embedder, RunsInParallel) else 1


@runtime_checkable
class ReleasesWorkMemory(Protocol):
    """An embedder whose runtime keeps the working memory of its largest call until told to let
    it go (onnxruntime's arena does)."""

    def release_work_memory(self) -> None:
        """Give back what past calls left reserved; later calls take it again as they need it."""
        ...


def release_work_memory(embedder: Embedder) -> None:
    """After a large piece of work (a document, a batch of them): let ``embedder`` give back the
    working memory it kept, where it keeps any."""
    if isinstance(embedder, ReleasesWorkMemory):
        embedder.release_work_memory()


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """A real, deterministic embedder with no model: hashed word and character-trigram features.

    Texts sharing words land close together, so tests of ranking and filtering behave like the
    real thing without torch. Not a semantic model: paraphrases with no shared words stay apart.
    """

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 8:
            raise ValueError("dimension must be >= 8")
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"hash-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _features(self, text: str) -> list[str]:
        words = [w.casefold() for w in _TOKEN.findall(text)]
        grams = [f"#{w[i : i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self._dimension
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            vector[0], norm = 1.0, 1.0
        return [v / norm for v in vector]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]
