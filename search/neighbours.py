"""The nearest memories a planned write decides against: what the index found, and the unit's own writes.

Both stores search their vector index for a write's neighbours, and neither index sees the writes
of the unit in progress (SQLite's is synced before the unit, OpenSearch's before a refresh). This is
the one rule that joins the two, so a batch's later memories see its earlier ones on every backend.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hivemem.model import Memory, MemoryState
from hivemem.resolution import Neighbour
from search.base import SearchFilter

__all__ = ["nearest", "neighbour_filter"]


def neighbour_filter(scope: str) -> SearchFilter:
    """Where a planned write's neighbours are searched: its scope, every state."""
    return SearchFilter(scopes=[scope], states=tuple(MemoryState))


def nearest(
    memory: Memory,
    found: Mapping[str, float],
    held: Mapping[str, Memory],
    written: Mapping[str, Memory],
    limit: int,
) -> list[Neighbour]:
    """The ``limit`` memories of ``memory``'s scope nearest to it, best first.

    ``found`` maps what the index returned (ids of the scope) to cosines, ``held`` holds those
    memories as stored, and ``written`` is this unit's writes so far: their versions replace the
    stored ones, and their cosines are computed here, since the index has not seen them.
    """
    if memory.embedding is None:
        return []
    cosines = dict(found)
    same_scope = [m for m in written.values() if m.scope == memory.scope and m.embedding is not None]
    if same_scope:
        # One product over this unit's writes: a bulk unit holds up to thousands of them.
        vector = np.asarray(memory.embedding, dtype=np.float32)
        scores = np.asarray([m.embedding for m in same_scope], dtype=np.float32) @ vector
        cosines.update((m.id, float(score)) for m, score in zip(same_scope, scores, strict=True))
    near = [Neighbour(written.get(i) or held[i], cosine) for i, cosine in cosines.items() if i in written or i in held]
    return sorted(near, key=lambda n: n.cosine, reverse=True)[:limit]
