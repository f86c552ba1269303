"""Two runs of one question set compared question by question: what one gains and loses on the other.

A difference of a few hundredths on a set of 57 or 136 questions is one to three questions; the
averages alone cannot say whether another model or setting is better or the set is too small to
tell. Each quality bench keeps every question's figures (``per_question``: question id to metric
to value); :func:`compare` pairs two such reports and counts, per metric, the questions where the
other run scores higher (``better``) and lower (``worse``), with the two-sided exact sign test over
those (for a 0/1 measure such as hit@k, the exact McNemar test): the chance that a run no better
than the base would be at least as lopsided. Ties add nothing either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from math import comb
from typing import Any

__all__ = ["PairedDifference", "as_rows", "compare", "compare_reports", "sign_test_p"]

PerQuestion = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """One metric of two runs over the questions both answered."""

    metric: str
    questions: int
    base: float
    other: float
    better: int
    worse: int
    p_value: float

    def line(self) -> str:
        """``hit@1 0.824 -> 0.846: +5 / -2 of 136 (p 0.45)``."""
        return (
            f"{self.metric} {self.base:.3f} -> {self.other:.3f}: "
            f"+{self.better} / -{self.worse} of {self.questions} (p {self.p_value:.2g})"
        )


def sign_test_p(better: int, worse: int) -> float:
    """Two-sided exact sign test: the probability, were each differing question a fair coin, of a
    split at least as uneven as ``better`` against ``worse`` (1.0 when none differ)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(better, worse) + 1))
    # Integer true division stays exact for any n; a float of 2**n overflows past 1,023 questions.
    return min(1.0, 2 * tail / (1 << n))


def compare(base: PerQuestion, other: PerQuestion, metric: str) -> PairedDifference:
    """``metric`` of ``other`` against ``base`` over the questions both hold it for.

    Raises ``ValueError`` when they share no question (two different sets)."""
    shared = sorted(q for q in base.keys() & other.keys() if metric in base[q] and metric in other[q])
    if not shared:
        raise ValueError(f"the two runs share no question with {metric!r}: not one question set")
    pairs = [(float(base[q][metric]), float(other[q][metric])) for q in shared]
    better = sum(b > a for a, b in pairs)
    worse = sum(b < a for a, b in pairs)
    return PairedDifference(
        metric=metric,
        questions=len(pairs),
        base=round(sum(a for a, _ in pairs) / len(pairs), 4),
        other=round(sum(b for _, b in pairs) / len(pairs), 4),
        better=better,
        worse=worse,
        p_value=round(sign_test_p(better, worse), 4),
    )


def compare_reports(
    base: Mapping[str, Any], other: Mapping[str, Any], metrics: Sequence[str] = ()
) -> list[PairedDifference]:
    """Each of ``metrics`` (default: every metric the base's questions carry) of two bench reports
    with ``per_question``; ``ValueError`` when either has none or they are of different sets."""
    if "per_question" not in base or "per_question" not in other:
        raise ValueError("a report without per_question: run the bench again with this version")
    base_questions: PerQuestion = base["per_question"]
    other_questions: PerQuestion = other["per_question"]
    named = list(metrics) or sorted({m for scores in base_questions.values() for m in scores})
    return [compare(base_questions, other_questions, metric) for metric in named]


def as_rows(differences: Sequence[PairedDifference]) -> list[dict[str, Any]]:
    """The differences as JSON rows."""
    return [asdict(d) for d in differences]
