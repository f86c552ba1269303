"""The rerank stage of recall: when to rerank, and how a reranker's scores reorder the first stage.

A reranker reads the query with each of the top ``top_n`` first-stage candidates and scores the
pair (a cross-encoder's logit, or a second model's cosine). Published results show reranking can
hurt a strong first stage and conversational data, so it is gated: ``always``, ``never``, or
``margin`` (only when the first stage is unsure: its best two candidates within ``margin``).

The reranked order is a blend of both stages, each min-max normalised over the top ``top_n``
(``weight`` on the reranker's). Candidates keep the first stage's scores, handed out in the new
order: the score of rank 1 goes to the new rank 1, and so on. So ``min_relevance`` and the
rescoring after this stage mean what they meant without it, and candidates past ``top_n`` keep
their place and score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

__all__ = ["RerankGate", "RerankOutcome", "RerankPolicy", "Reranked", "Reranker", "rerank_order", "wanted"]


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, passage) pairs; a higher score is a better match. Implementations MUST return
    one finite score per passage, in order."""

    @property
    def model_id(self) -> str:
        """The model that scores, for ``explain`` and the benchmarks."""
        ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """The score of each passage for ``query``."""
        ...


class RerankGate(StrEnum):
    """When recall reranks."""

    ALWAYS = "always"
    NEVER = "never"
    MARGIN = "margin"


class RerankOutcome(StrEnum):
    """What the stage did for one recall, as ``explain`` reports it."""

    APPLIED = "applied"
    OFF = "off"  # no reranker configured
    GATED = "gated"  # the gate said no: the first stage was sure enough, or too few candidates
    UNAVAILABLE = "unavailable"  # the reranker failed or its pool is down: first-stage order
    LATE = "late"  # the pool did not answer within the deadline: first-stage order


@dataclass(frozen=True, slots=True)
class RerankPolicy:
    """When the stage runs and how much it moves the order; the configured one is recall's
    tuning (``search.recall_params.RecallParams.rerank``)."""

    gate: RerankGate
    top_n: int
    margin: float
    weight: float


def wanted(policy: RerankPolicy, scores: Sequence[float]) -> bool:
    """Whether to rerank a first stage whose scores, best first, are ``scores``."""
    if policy.gate is RerankGate.NEVER or len(scores) < 2:
        return False
    if policy.gate is RerankGate.ALWAYS:
        return True
    return scores[0] - scores[1] < policy.margin


@dataclass(frozen=True, slots=True)
class Reranked:
    """One candidate after the stage: its new score, its reranker score and rank (None past top N)."""

    id: str
    score: float
    rerank_score: float | None
    rerank_rank: int | None


def _normalised(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high - low <= 0:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def rerank_order(
    first: Sequence[tuple[str, float]], rerank_scores: Sequence[float], policy: RerankPolicy
) -> list[Reranked]:
    """``first`` (id, score), best first, reordered by the blend over its first ``len(rerank_scores)``.

    ``rerank_scores`` score the head of ``first`` in order; the rest keep their place.
    """
    head = list(first[: len(rerank_scores)])
    if len(head) != len(rerank_scores):
        raise ValueError(f"{len(rerank_scores)} rerank scores for {len(head)} candidates")
    if not head:
        return [Reranked(i, s, None, None) for i, s in first]
    by_first = _normalised([s for _, s in head])
    by_rerank = _normalised(list(rerank_scores))
    blended = [(1 - policy.weight) * a + policy.weight * b for a, b in zip(by_first, by_rerank, strict=True)]
    # Ties keep the first stage's order (the sort is stable on position).
    order = sorted(range(len(head)), key=lambda i: -blended[i])
    rerank_rank = {i: r for r, i in enumerate(sorted(range(len(head)), key=lambda i: -rerank_scores[i]), start=1)}
    out = [
        Reranked(head[i][0], head[position][1], float(rerank_scores[i]), rerank_rank[i])
        for position, i in enumerate(order)
    ]
    return out + [Reranked(i, s, None, None) for i, s in first[len(head) :]]
