"""Metrics for the benchmarks: retrieval (pure functions over ranked ids and relevance judgements)
and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set

__all__ = ["hit_at", "ndcg_at", "percentile", "recall_at", "reciprocal_rank"]


def hit_at(ranked: Sequence[str], relevant: Set[str], k: int) -> float:
    """1.0 when any relevant id is in the first ``k``, else 0.0."""
    return 1.0 if any(r in relevant for r in ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Set[str]) -> float:
    """1 / rank of the first relevant id (0.0 when none was retrieved)."""
    for position, doc in enumerate(ranked, start=1):
        if doc in relevant:
            return 1.0 / position
    return 0.0


def recall_at(ranked: Sequence[str], relevant: Set[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k``."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def ndcg_at(ranked: Sequence[str], grades: Mapping[str, float], k: int) -> float:
    """nDCG@k with graded relevance (trec_eval's linear gain, as BEIR computes it)."""
    dcg = sum(grades.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0–1) of ``values``: the measured value nearest to it, never a blend of two
    (every benchmark reports its p95 by this one rule, so their figures compare)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
