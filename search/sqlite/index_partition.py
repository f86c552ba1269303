"""One scope's share of the in-memory index: filter fields, lengths, postings and vectors, slot by slot.

Slots ``[0, size)`` are live and dense: a removed row's slot is filled by the last row. Every
filter of a :class:`search.base.SearchFilter` is a vectorised comparison over these arrays, and the
vectors (:mod:`search.sqlite.vector_set`) are searched through the mask of passing slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hivemem.fusion import Candidate
from hivemem.model import MemoryState, MemoryType
from search.base import SearchFilter
from search.sqlite.keyword_index import Postings, length_norm
from search.sqlite.tuning import SQLiteTuning
from search.sqlite.vector_set import VectorSet

__all__ = ["STATE_CODES", "TYPE_CODES", "UNKNOWN_CODE", "Partition", "RowFields", "VectorHit"]

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


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A row found by the vector search, with its float16 score (the caller rescores it exactly)."""

    rowid: int
    memory_id: str
    score: float


def _among(codes: npt.NDArray[np.int8], allowed: Sequence[int]) -> Mask:
    """``codes`` in ``allowed``, by table lookup (``np.isin`` sorts, ten times slower here)."""
    table = np.zeros(256, dtype=np.bool_)
    table[np.asarray(allowed, dtype=np.int64) & 0xFF] = True
    return table[codes.view(np.uint8)]


class Partition:
    """The rows of one scope."""

    def __init__(self, dimension: int, clusters: SQLiteTuning, capacity: int = _INITIAL_CAPACITY) -> None:
        capacity = max(capacity, _INITIAL_CAPACITY)
        self.size = 0
        self.tokens = 0  # the live rows' lengths together, for BM25's average and for compaction
        self.vectors = VectorSet(dimension, clusters)
        self.labels = np.full(capacity, -1, dtype=np.int64)  # each slot's vector label; -1: no vector
        # The last search filter's mask of slots and bitmap over vector labels, and BM25's length norms,
        # while nothing changed: each cache one (key, value) pair, so concurrent searches never read a
        # key with another key's value.
        self._version = 0
        self._mask_cache: tuple[tuple[object, ...], Mask | None] | None = None
        self._bitmap_cache: tuple[tuple[object, ...], tuple[npt.NDArray[np.uint8] | None, int]] | None = None
        self._norm_cache: tuple[tuple[int, float], F64] | None = None
        self.states = np.zeros(capacity, dtype=np.int8)
        self.types = np.zeros(capacity, dtype=np.int8)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.lengths = np.zeros(capacity, dtype=np.int32)
        self.rowids = np.zeros(capacity, dtype=np.int64)
        self.ids: list[str] = []
        self.tags: list[frozenset[str]] = []
        self.postings = Postings()

    def _grow(self, capacity: int) -> None:
        for name in ("labels", "states", "types", "created", "lengths", "rowids"):
            old = getattr(self, name)
            grown = np.full(capacity, -1, dtype=old.dtype) if name == "labels" else np.zeros(capacity, old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def put(self, slot: int | None, rowid: int, fields: RowFields, vector: F32 | None) -> int:
        """Write a row into ``slot`` (None: a new slot at the end); returns the slot."""
        self._version += 1
        if slot is None:
            if self.size == len(self.rowids):
                self._grow(self.size + self.size // 2)  # by half: at 1M rows the copy sets the peak RSS
            slot = self.size
            self.size += 1
            self.ids.append(fields.memory_id)
            self.tags.append(fields.tags)
        else:
            self.ids[slot], self.tags[slot] = fields.memory_id, fields.tags
            self.tokens -= int(self.lengths[slot])
            label = int(self.labels[slot])
            if label >= 0 and (vector is None or not self.vectors.holds(label, vector)):
                self.vectors.kill(label)
                self.labels[slot] = -1
        self.tokens += fields.length
        self.rowids[slot] = rowid
        if vector is not None and self.labels[slot] < 0:
            self.labels[slot] = self.vectors.add(vector[None, :], np.asarray([slot]))[0]
            self._maintain_vectors()
        self.states[slot], self.types[slot], self.created[slot] = fields.state, fields.memory_type, fields.created
        self.lengths[slot] = fields.length
        return slot

    def put_vectors(self, slots: npt.NDArray[np.int64], vectors: F32) -> None:
        """Vectors for rows just put without one, in one add (a load adds thousands at a time)."""
        self._version += 1
        self.labels[slots] = self.vectors.add(vectors, slots)
        self._maintain_vectors()

    def _maintain_vectors(self) -> None:
        relabel = self.vectors.maintain()
        if relabel is not None:
            held = self.labels[: self.size] >= 0
            self.labels[: self.size][held] = relabel[self.labels[: self.size][held]]

    def remove(self, slot: int) -> int | None:
        """Free ``slot`` by moving the last row into it; returns the rowid that moved, if any."""
        self._version += 1
        last = self.size - 1
        moved = None
        self.tokens -= int(self.lengths[slot])
        if self.labels[slot] >= 0:
            self.vectors.kill(int(self.labels[slot]))
        if slot != last:
            for array in (self.labels, self.states, self.types, self.created, self.lengths, self.rowids):
                array[slot] = array[last]
            if self.labels[slot] >= 0:
                self.vectors.move(int(self.labels[slot]), slot)
            self.ids[slot], self.tags[slot] = self.ids[last], self.tags[last]
            moved = int(self.rowids[slot])
        self.labels[last] = -1
        self.ids.pop()
        self.tags.pop()
        self.size = last
        return moved

    def length_norm(self, average_length: float) -> F64:
        """Each live slot's BM25 length norm for the index's ``average_length``, kept while unchanged."""
        key = (self._version, average_length)
        cached = self._norm_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        norm = length_norm(self.lengths[: self.size], average_length)
        self._norm_cache = (key, norm)
        return norm

    def set_lengths(self, lengths: npt.NDArray[np.int64]) -> None:
        """Every live row's length at once, from lengths indexed by rowid (the load)."""
        self.lengths[: self.size] = lengths[self.rowids[: self.size]]
        self.tokens = int(self.lengths[: self.size].sum())
        self._version += 1

    def compact_if_stale(self, generation_of: npt.NDArray[np.uint32]) -> None:
        """Drop old postings once they far outnumber the live ones (rewrites and removals leave them),
        and dead vectors once they outnumber the live ones (:meth:`VectorSet.maintain`)."""
        if self.postings.entries > 4 * max(1, self.tokens):
            self.postings.compact(generation_of)
        self._maintain_vectors()

    def mask(self, where: SearchFilter, excluded: set[str]) -> Mask | None:
        """Which live slots pass ``where`` (None: all of them)."""
        n = self.size
        mask: Mask | None = None

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

    def _cached_mask(self, where: SearchFilter, excluded: set[str]) -> tuple[tuple[object, ...], Mask | None]:
        """:meth:`mask`, kept while the rows and the filter are unchanged (most recalls share one
        filter, and at 1M rows the comparisons cost more than a search), with its key."""
        key = (self._version, *_filter_key(where), frozenset(excluded))
        cached = self._mask_cache
        if cached is not None and cached[0] == key:
            return cached
        self._mask_cache = (key, self.mask(where, excluded))
        return self._mask_cache

    def nearest(self, queries: F32, where: SearchFilter, excluded: set[str], limit: int) -> list[list[VectorHit]]:
        """Per query (rows of ``queries``, unit length), about the best ``limit`` vectors passing
        ``where``, by their float16 scores."""
        key, mask = self._cached_mask(where, excluded)
        cached = self._bitmap_cache
        if cached is None or cached[0] != key:
            cached = self._bitmap_cache = (key, self.vectors.passing(mask))
        bitmap, passing = cached[1]
        found = self.vectors.search(queries, bitmap, passing, limit)
        ids, rowids = self.ids, self.rowids
        return [
            [VectorHit(int(rowids[s]), ids[s], v) for s, v in zip(slots.tolist(), scores.tolist(), strict=True)]
            for slots, scores in found
        ]

    def matching(self, scores: F64, where: SearchFilter, excluded: set[str], limit: int) -> list[Candidate]:
        """The best ``limit`` slots with a keyword score (> 0) that pass ``where``; ``scores`` is the
        caller's to give up (filtered out slots are zeroed in it)."""
        _, mask = self._cached_mask(where, excluded)
        if mask is not None:
            scores[~mask] = 0.0
        slots = np.flatnonzero(scores)
        return self.best(scores[slots], slots, limit)


def _filter_key(where: SearchFilter) -> tuple[object, ...]:
    return (
        where.states,
        where.memory_types,
        where.created_after,
        where.created_before,
        where.tags,
    )


def ranked(hits: Sequence[Candidate], limit: int) -> list[Candidate]:
    """Best first, ties by id, at most ``limit``."""
    return sorted(hits, key=lambda h: (-h.score, h.id))[:limit]
