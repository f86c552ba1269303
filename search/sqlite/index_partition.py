"""One scope's share of the in-memory index: vectors, filter fields, lengths and postings, slot by slot.

Slots ``[0, size)`` are live and dense: a removed row's slot is filled by the last row. Every
filter of a :class:`search.base.SearchFilter` is a vectorised comparison over these arrays.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hivemem.fusion import Candidate
from hivemem.model import MemoryState, MemoryType
from search.base import SearchFilter
from search.sqlite.keyword_index import Postings

__all__ = ["STATE_CODES", "TYPE_CODES", "UNKNOWN_CODE", "Partition", "RowFields"]

STATE_CODES = {state.value: code for code, state in enumerate(MemoryState)}
TYPE_CODES = {kind.value: code for code, kind in enumerate(MemoryType)}
UNKNOWN_CODE = -1
_INITIAL_CAPACITY = 256

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class RowFields:
    """What the index keeps of a row besides its vector and terms."""

    memory_id: str
    state: int
    memory_type: int
    created: float
    tags: frozenset[str]
    length: int


_SPLIT_ROWS = 16_384
_SCORER_THREADS = min(4, os.cpu_count() or 1)
_SCORERS = ThreadPoolExecutor(max_workers=_SCORER_THREADS, thread_name_prefix="hivemem-score")


def product(matrix: F32, queries: F32) -> F32:
    """``matrix @ queries.T``, row blocks spread over a few threads of our own.

    BLAS runs single-threaded in this process (:mod:`search.sqlite.memory_index` sets it): OpenBLAS's
    own threads spin after each call and took the cores from the model's threads, which doubled a
    recall's latency at 100k memories. Our threads wait on a queue instead, and split the rows just
    as well (100k rows: 11 ms in one thread, 6.6 ms in two).
    """
    n = len(matrix)
    blocks = min(_SCORER_THREADS, max(1, n // _SPLIT_ROWS))
    if blocks == 1:
        return matrix @ queries.T
    step = -(-n // blocks)
    parts = [_SCORERS.submit(np.matmul, matrix[start : start + step], queries.T) for start in range(0, n, step)]
    return np.concatenate([part.result() for part in parts])


def _among(codes: npt.NDArray[np.int8], allowed: Sequence[int]) -> Mask:
    """``codes`` in ``allowed``, by table lookup (``np.isin`` sorts, ten times slower here)."""
    table = np.zeros(256, dtype=np.bool_)
    table[np.asarray(allowed, dtype=np.int64) & 0xFF] = True
    return table[codes.view(np.uint8)]


class Partition:
    """The rows of one scope."""

    def __init__(self, dimension: int, capacity: int = _INITIAL_CAPACITY) -> None:
        capacity = max(capacity, _INITIAL_CAPACITY)
        self.size = 0
        self.tokens = 0  # the live rows' lengths together, for BM25's average and for compaction
        self.matrix = np.zeros((capacity, dimension), dtype=np.float32)
        self.has_vector = np.zeros(capacity, dtype=np.bool_)
        self.states = np.zeros(capacity, dtype=np.int8)
        self.types = np.zeros(capacity, dtype=np.int8)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.lengths = np.zeros(capacity, dtype=np.int32)
        self.rowids = np.zeros(capacity, dtype=np.int64)
        self.ids: list[str] = []
        self.tags: list[frozenset[str]] = []
        self.postings = Postings()

    def _grow(self) -> None:
        # Grow by half, not double: at 1M rows the transient copy is what sets the peak RSS.
        capacity = len(self.matrix) + len(self.matrix) // 2
        self.matrix = np.resize(self.matrix, (capacity, self.matrix.shape[1]))
        for name in ("has_vector", "states", "types", "created", "lengths", "rowids"):
            setattr(self, name, np.resize(getattr(self, name), capacity))

    def put(self, slot: int | None, rowid: int, fields: RowFields, vector: F32 | None) -> int:
        """Write a row into ``slot`` (None: a new slot at the end); returns the slot."""
        if slot is None:
            if self.size == len(self.matrix):
                self._grow()
            slot = self.size
            self.size += 1
            self.ids.append(fields.memory_id)
            self.tags.append(fields.tags)
        else:
            self.ids[slot], self.tags[slot] = fields.memory_id, fields.tags
            self.tokens -= int(self.lengths[slot])
        self.tokens += fields.length
        self.rowids[slot] = rowid
        self.has_vector[slot] = vector is not None
        self.matrix[slot] = 0.0 if vector is None else vector
        self.states[slot], self.types[slot], self.created[slot] = fields.state, fields.memory_type, fields.created
        self.lengths[slot] = fields.length
        return slot

    def remove(self, slot: int) -> int | None:
        """Free ``slot`` by moving the last row into it; returns the rowid that moved, if any."""
        last = self.size - 1
        moved = None
        self.tokens -= int(self.lengths[slot])
        if slot != last:
            self.matrix[slot] = self.matrix[last]
            for array in (self.has_vector, self.states, self.types, self.created, self.lengths, self.rowids):
                array[slot] = array[last]
            self.ids[slot], self.tags[slot] = self.ids[last], self.tags[last]
            moved = int(self.rowids[slot])
        self.ids.pop()
        self.tags.pop()
        self.size = last
        return moved

    def set_lengths(self, lengths: npt.NDArray[np.int64]) -> None:
        """Every live row's length at once, from lengths indexed by rowid (the load)."""
        self.lengths[: self.size] = lengths[self.rowids[: self.size]]
        self.tokens = int(self.lengths[: self.size].sum())

    def compact_if_stale(self, generation_of: npt.NDArray[np.uint32]) -> None:
        """Drop old postings once they far outnumber the live ones (rewrites and removals leave them)."""
        if self.postings.entries > 4 * max(1, self.tokens):
            self.postings.compact(generation_of)

    def mask(self, where: SearchFilter, excluded: set[str], *, vectors_only: bool) -> Mask | None:
        """Which live slots pass ``where`` (None: all of them)."""
        n = self.size
        mask: Mask | None = self.has_vector[:n].copy() if vectors_only and not self.has_vector[:n].all() else None

        def narrow(passing: Mask) -> None:
            nonlocal mask
            mask = passing if mask is None else mask & passing

        states = [STATE_CODES[s.value] for s in where.states]
        if len(states) < len(STATE_CODES):
            narrow(_among(self.states[:n], states))
        if where.memory_types:
            narrow(_among(self.types[:n], [TYPE_CODES[t.value] for t in where.memory_types]))
        if where.created_after is not None:
            narrow(self.created[:n] >= where.created_after.timestamp())
        if where.created_before is not None:
            narrow(self.created[:n] < where.created_before.timestamp())
        if where.tags:
            wanted = set(where.tags)
            narrow(np.fromiter((not wanted.isdisjoint(t) for t in self.tags), dtype=np.bool_, count=n))
        if excluded:
            narrow(np.fromiter((i not in excluded for i in self.ids), dtype=np.bool_, count=n))
        return mask

    def best(self, scores: F64 | F32, slots: npt.NDArray[np.intp] | None, limit: int) -> list[Candidate]:
        """The ``limit`` best of ``scores`` (over ``slots``, or every slot), ties kept for the caller's sort."""
        found = len(scores)
        if found == 0:
            return []
        if limit < found:
            # Everything tied with the k-th score stays in, so ties are broken by id, not by chance.
            kth = scores[np.argpartition(-scores, limit - 1)[limit - 1]]
            chosen = np.flatnonzero(scores >= kth)
        else:
            chosen = np.arange(found)
        picked = chosen if slots is None else slots[chosen]
        return [Candidate(self.ids[s], float(v)) for s, v in zip(picked.tolist(), scores[chosen].tolist(), strict=True)]

    def nearest(self, queries: F32, where: SearchFilter, excluded: set[str], limit: int) -> list[list[Candidate]]:
        """Per query (rows of ``queries``, unit length), the best ``limit`` vectors passing ``where``."""
        n = self.size
        mask = self.mask(where, excluded, vectors_only=True)
        if mask is None:
            slots = None
            scores = product(self.matrix[:n], queries)
        else:
            slots = np.flatnonzero(mask)
            if slots.size == 0:
                return [[] for _ in queries]
            # Below about a third of the partition, scoring only the matching rows (a gather) is cheaper.
            scores = (
                self.matrix[slots] @ queries.T if slots.size < 0.3 * n else product(self.matrix[:n], queries)[slots]
            )
        return [self.best(scores[:, column], slots, limit) for column in range(len(queries))]

    def matching(self, scores: F64, where: SearchFilter, excluded: set[str], limit: int) -> list[Candidate]:
        """The best ``limit`` slots with a keyword score (> 0) that pass ``where``."""
        hit = scores > 0
        mask = self.mask(where, excluded, vectors_only=False)
        slots = np.flatnonzero(hit if mask is None else hit & mask)
        return self.best(scores[slots], slots, limit)


def ranked(hits: Sequence[Candidate], limit: int) -> list[Candidate]:
    """Best first, ties by id, at most ``limit``."""
    return sorted(hits, key=lambda h: (-h.score, h.id))[:limit]
