"""Unit vectors and cosine rankings, as the stores that keep a second model's vectors need them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hivemem.errors import EmbeddingMismatchError
from hivemem.fusion import Candidate

__all__ = ["checked_unit", "ranked_cosines", "unit"]


def unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    """``vector`` as float32 of length one (a zero vector stays zero)."""
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


def checked_unit(vector: Sequence[float], dimension: int, what: str) -> np.ndarray:
    """:func:`unit` of a vector that must be ``dimension`` long; ``EmbeddingMismatchError`` if not."""
    array = np.asarray(vector, dtype=np.float32)
    if array.shape != (dimension,):
        raise EmbeddingMismatchError(f"{what} has a {array.size}-dimension vector, the model makes {dimension}")
    return unit(array)


def ranked_cosines(query: np.ndarray, ids: Sequence[str], rows: np.ndarray) -> list[Candidate]:
    """Each id's cosine with the unit ``query`` (``rows`` are unit vectors, one per id), best first, ties by id."""
    if not ids:
        return []
    cosines = (rows @ query).tolist()
    return sorted((Candidate(i, float(c)) for i, c in zip(ids, cosines, strict=True)), key=lambda c: (-c.score, c.id))
