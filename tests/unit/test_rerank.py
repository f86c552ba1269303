"""The rerank stage's pure rules (hivemem/rerank.py): the gate, and how a reranker reorders the head."""

from __future__ import annotations

import pytest

from hivemem.rerank import RerankGate, RerankPolicy, rerank_order, wanted

FIRST = [("a", 0.9), ("b", 0.8), ("c", 0.5), ("d", 0.4), ("e", 0.1)]


def policy(**changes: object) -> RerankPolicy:
    """A policy that reranks always, with the given changes."""
    given: dict[str, object] = {"gate": RerankGate.ALWAYS, "top_n": 30, "margin": 0.05, "weight": 0.5}
    return RerankPolicy(**(given | changes))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gate", "scores", "expected"),
    [
        (RerankGate.NEVER, [0.9, 0.89], False),
        (RerankGate.ALWAYS, [0.9, 0.1], True),
        (RerankGate.ALWAYS, [0.9], False),  # nothing to reorder
        (RerankGate.MARGIN, [0.9, 0.87], True),  # unsure: within the margin
        (RerankGate.MARGIN, [0.9, 0.5], False),  # sure: the best stands well clear
        (RerankGate.MARGIN, [], False),
    ],
)
def test_the_gate(gate: RerankGate, scores: list[float], expected: bool) -> None:
    assert wanted(policy(gate=gate, margin=0.05), scores) is expected


def test_the_head_is_reordered_and_keeps_the_first_stages_scores_in_order() -> None:
    # The reranker prefers c, then a, then b; with all the weight on it, that is the order.
    out = rerank_order(FIRST, [0.2, 0.1, 3.0], policy(weight=1.0))
    assert [r.id for r in out] == ["c", "a", "b", "d", "e"]
    assert [r.score for r in out] == [0.9, 0.8, 0.5, 0.4, 0.1]  # scores handed out by position
    assert [(r.rerank_rank, r.rerank_score) for r in out[:3]] == [(1, 3.0), (2, 0.2), (3, 0.1)]
    assert [(r.rerank_rank, r.rerank_score) for r in out[3:]] == [(None, None), (None, None)]


def test_the_blend_weighs_both_stages() -> None:
    # First stage normalised over the head: a 1.0, b 0.75, c 0.0; reranker: a 0, b 0.5, c 1.0.
    # Half each: a 0.5, b 0.625, c 0.5 (a before c: a tie keeps the first order). 0.7: c 0.7, b 0.575, a 0.3.
    head = FIRST[:3]
    assert [r.id for r in rerank_order(head, [0.0, 1.0, 2.0], policy(weight=0.0))] == ["a", "b", "c"]
    assert [r.id for r in rerank_order(head, [0.0, 1.0, 2.0], policy(weight=0.5))] == ["b", "a", "c"]
    assert [r.id for r in rerank_order(head, [0.0, 1.0, 2.0], policy(weight=0.7))] == ["c", "b", "a"]


def test_ties_keep_the_first_stage_order_and_equal_scores_change_nothing() -> None:
    assert [r.id for r in rerank_order(FIRST, [1.0] * 5, policy(weight=1.0))] == list("abcde")


def test_scores_must_match_the_head() -> None:
    with pytest.raises(ValueError, match="3 rerank scores for 2 candidates"):
        rerank_order(FIRST[:2], [1.0, 2.0, 3.0], policy())
    assert [r.id for r in rerank_order(FIRST, [], policy())] == list("abcde")
