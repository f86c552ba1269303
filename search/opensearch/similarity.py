"""How a cluster's BM25 scores compare with Lucene's current BM25.

OpenSearch 2.x scores ``match`` queries with Lucene's ``LegacyBM25Similarity``, which keeps the
``(k1 + 1)`` factor in every term's weight; OpenSearch 3.0 moved to ``BM25Similarity``, which dropped
it. Recall reads a small scope's BM25 leg on its own scale (``bm25_half_score``, in the modern
units), so a store must say which one its cluster uses, or the same memories fuse differently on
2.x and 3.x.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LEGACY_BM25_K1", "bm25_scale_of"]

LEGACY_BM25_K1 = 1.2
"""The ``k1`` of OpenSearch's default similarity (Lucene's default), in both generations."""

_MODERN_FROM_MAJOR = 3


def bm25_scale_of(info: Mapping[str, Any]) -> float:
    """The cluster's BM25 score of a match over the modern BM25's, from its root answer (``GET /``).

    A version that cannot be read is taken as modern: the scale then errs the way a newer cluster
    would, and a small scope's BM25 leg only saturates a little sooner.
    """
    version = info.get("version")
    number = version.get("number") if isinstance(version, Mapping) else None
    major = str(number).split(".", 1)[0] if number is not None else ""
    if major.isdigit() and int(major) < _MODERN_FROM_MAJOR:
        return 1.0 + LEGACY_BM25_K1
    return 1.0
