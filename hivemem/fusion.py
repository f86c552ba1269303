"""Fusion of ranked candidate lists: pure functions, the same for every backend.

Backends return candidates with their raw leg scores (BM25 on its scale, cosine on its own);
fusion happens here, once. ``minmax_fuse`` does the arithmetic of OpenSearch's
normalization-processor (``min_max`` + ``arithmetic_mean``): each leg is min-max normalised over
its own candidates (a lone or all-equal leg scores 1.0, the minimum scores 0.001 so it is not
lost; a leg that ran out of documents may be normalised from a floor instead), then a weighted
mean where a candidate missing from a leg counts 0 for that leg.
``rrf_fuse`` is reciprocal-rank fusion, ``sum(w / (k + rank))``, rank starting at 1.
Ties are broken by id so rankings are stable across backends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Candidate", "Fused", "minmax_fuse", "minmax_normalise", "rrf_fuse", "saturation_normalise"]

_MIN_NORMALISED = 0.001
_SINGLE_RESULT = 1.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """One id a retrieval leg found, with that leg's raw score (higher is better)."""

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused result: the combined score and, per leg, the 1-based rank and the raw score it
    had there (the engine's BM25, the cosine)."""

    id: str
    score: float
    ranks: Mapping[str, int]
    leg_scores: Mapping[str, float] = field(default_factory=dict)


def minmax_normalise(candidates: Sequence[Candidate], floor: float | None = None) -> dict[str, float]:
    """Min-max normalise one leg's scores into (0, 1], as OpenSearch's ``min_max`` technique does.

    ``floor``: a score that every document the leg did not return is known to have at most (a
    leg that ran out of documents: BM25 scores the others 0). The minimum is then taken as at most
    the floor (like OpenSearch's ``lower_bounds`` at ``min_score`` 0), so the weakest candidate
    keeps its share of the best score instead of falling to 0.001 beside documents that do not
    match at all.
    """
    if not candidates:
        return {}
    scores = [c.score for c in candidates]
    low, high = min(scores), max(scores)
    if floor is not None and floor < low:
        low = floor
    if high == low:
        return {c.id: _SINGLE_RESULT for c in candidates}
    normalised: dict[str, float] = {}
    for c in candidates:
        value = (c.score - low) / (high - low)
        normalised[c.id] = value if value > 0.0 else _MIN_NORMALISED
    return normalised


def _ranks(legs: Mapping[str, Sequence[Candidate]]) -> dict[str, dict[str, int]]:
    ranks: dict[str, dict[str, int]] = {}
    for leg, candidates in legs.items():
        for position, candidate in enumerate(candidates, start=1):
            ranks.setdefault(candidate.id, {}).setdefault(leg, position)
    return ranks


def _leg_scores(legs: Mapping[str, Sequence[Candidate]]) -> dict[str, dict[str, float]]:
    scores: dict[str, dict[str, float]] = {}
    for leg, candidates in legs.items():
        for candidate in candidates:
            scores.setdefault(candidate.id, {}).setdefault(leg, candidate.score)
    return scores


def _ordered(
    scores: dict[str, float], ranks: dict[str, dict[str, int]], legs: Mapping[str, Sequence[Candidate]]
) -> list[Fused]:
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    raw = _leg_scores(legs)
    return [Fused(id=doc_id, score=score, ranks=ranks[doc_id], leg_scores=raw[doc_id]) for doc_id, score in ordered]


def _check_weights(legs: Mapping[str, Sequence[Candidate]], weights: Mapping[str, float]) -> None:
    missing = set(legs) - set(weights)
    if missing:
        raise ValueError(f"no weight for legs {sorted(missing)}")
    if any(w < 0 for w in weights.values()) or sum(weights[leg] for leg in legs) <= 0:
        raise ValueError("weights must be non-negative and not all zero")


def saturation_normalise(candidates: Sequence[Candidate], half: float) -> dict[str, float]:
    """``s / (s + half)``: a score on its own scale, not against the other candidates' (``half``
    is the score that maps to 0.5). A leg's best match is then worth what it is, not 1.0 because
    it is the best of a handful."""
    return {c.id: max(c.score, 0.0) / (max(c.score, 0.0) + half) for c in candidates}


def minmax_fuse(
    legs: Mapping[str, Sequence[Candidate]],
    weights: Mapping[str, float],
    floors: Mapping[str, float] | None = None,
    saturating: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Normalise each leg over its own candidates, then take the weighted mean (missing = 0).

    Each leg must be ordered best first (its ranks are reported in ``Fused.ranks``). ``floors``:
    per leg, the floor of :func:`minmax_normalise` (legs that ran out of documents).
    ``saturating``: per leg, the ``half`` of :func:`saturation_normalise`, used instead of min-max
    for that leg. Returns every candidate of every leg, best first.
    """
    _check_weights(legs, weights)
    total_weight = sum(weights[leg] for leg in legs)
    scores: dict[str, float] = {}
    for leg, candidates in legs.items():
        half = (saturating or {}).get(leg)
        normalised = (
            saturation_normalise(candidates, half)
            if half is not None
            else minmax_normalise(candidates, (floors or {}).get(leg))
        )
        for doc_id, value in normalised.items():
            scores[doc_id] = scores.get(doc_id, 0.0) + weights[leg] * value
    return _ordered({k: v / total_weight for k, v in scores.items()}, _ranks(legs), legs)


def rrf_fuse(legs: Mapping[str, Sequence[Candidate]], weights: Mapping[str, float], k: int = 60) -> list[Fused]:
    """Reciprocal-rank fusion: ``sum(weight / (k + rank))`` over the legs a candidate appears in."""
    if k < 1:
        raise ValueError("rrf k must be >= 1")
    _check_weights(legs, weights)
    ranks = _ranks(legs)
    scores = {
        doc_id: sum(weights[leg] / (k + rank) for leg, rank in by_leg.items()) for doc_id, by_leg in ranks.items()
    }
    return _ordered(scores, ranks, legs)
