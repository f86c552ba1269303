"""Query expansion by pseudo-relevance feedback on the vector leg (Rocchio's rule, "HyDE-lite").

The best few first-pass hits are taken as relevant without asking anyone: their centroid is added
to the query vector (``weight`` times it), and the vector leg runs again with the blend. It moves
the query toward how the scope's own memories word the topic, at the cost of one more vector
search; it can also move it toward a wrong first hit, which is why it is measured before it is a
default (bench/RESULTS.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["prf_vector"]


def prf_vector(query: Sequence[float], feedback: Sequence[Sequence[float]], weight: float) -> list[float]:
    """``query + weight × centroid(feedback)``, L2-normalised; the query itself when there is no feedback."""
    if not feedback or weight <= 0:
        return list(query)
    size = len(feedback)
    blended = [q + weight * sum(v[i] for v in feedback) / size for i, q in enumerate(query)]
    norm = math.sqrt(math.fsum(x * x for x in blended))
    return list(query) if norm == 0 else [x / norm for x in blended]
