"""A process-local copy of stored vectors, so an exact cosine search reads no blobs from disk.

Rows are keyed by the database rowid (never reused) and stamped with the row's ``vec_version``,
which a trigger bumps whenever the embedding is written. A search passes the (rowid, version)
pairs its filtered SQL query returned; rows missing here or stamped with an older version are
loaded first. Rows deleted from the database keep their slot until the process ends, and are
never scored because no query returns their rowid.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["VectorIndex"]

_INITIAL_CAPACITY = 1024


class VectorIndex:
    """Vectors of one store, in one growing float32 matrix. Thread-safe."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._matrix = np.zeros((_INITIAL_CAPACITY, dimension), dtype=np.float32)
        self._slot: dict[int, int] = {}
        self._version: dict[int, int] = {}
        self._lock = threading.Lock()

    def stale(self, rows: Iterable[tuple[int, int]]) -> list[int]:
        """The rowids among ``(rowid, version)`` pairs that must be (re)loaded."""
        with self._lock:
            return [rowid for rowid, version in rows if self._version.get(rowid) != version]

    def load(self, rows: Iterable[tuple[int, int, bytes]]) -> None:
        """Store ``(rowid, version, float32 blob)`` rows, replacing older versions."""
        with self._lock:
            for rowid, version, blob in rows:
                slot = self._slot.get(rowid)
                if slot is None:
                    slot = len(self._slot)
                    if slot == len(self._matrix):
                        self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
                    self._slot[rowid] = slot
                vector = np.frombuffer(blob, dtype=np.float32)
                norm = float(np.linalg.norm(vector))
                self._matrix[slot] = vector / norm if norm else vector
                self._version[rowid] = version

    def cosine(self, query: Sequence[float], rowids: Sequence[int]) -> npt.NDArray[np.float32]:
        """Cosine similarity of ``query`` to each of ``rowids`` (all loaded), in their order."""
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        q = q / norm if norm else q
        with self._lock:
            slots = np.fromiter((self._slot[r] for r in rowids), dtype=np.int64, count=len(rowids))
            used = len(self._slot)
            # One matrix-vector product over every slot beats gathering the filtered rows first.
            every = self._matrix[:used] @ q
        return every[slots]
