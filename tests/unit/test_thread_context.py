"""The context leg (hivemem/thread_context.py): own score plus the neighbours', nearest weighing most."""

from __future__ import annotations

import pytest

from hivemem.fusion import Candidate
from hivemem.thread_context import context_leg

# A thread a-b-c-d-e; the question's words are in b (score 2) and d (score 1).
NEIGHBOURS = {
    "b": [("a", 1), ("c", 1), ("d", 2)],
    "d": [("c", 1), ("b", 2), ("e", 1)],
}


def test_a_turn_between_two_matches_rises_above_them() -> None:
    leg = context_leg([Candidate("b", 2.0), Candidate("d", 1.0)], NEIGHBOURS, weight=1.0, limit=10)
    scores = {c.id: c.score for c in leg}
    # c: nothing of its own, 1.0 x 2 from b and 1.0 x 1 from d.
    assert scores == pytest.approx({"c": 3.0, "b": 2.5, "d": 2.0, "a": 2.0, "e": 1.0})
    assert [c.id for c in leg][:2] == ["c", "b"]


def test_without_neighbours_the_leg_is_the_keyword_leg() -> None:
    keyword = [Candidate("x", 3.0), Candidate("y", 1.0)]
    assert context_leg(keyword, {}, weight=1.0, limit=10) == keyword
    assert context_leg(keyword, {}, weight=1.0, limit=1) == keyword[:1]


def test_the_weight_halves_with_each_step() -> None:
    leg = context_leg([Candidate("b", 4.0)], {"b": [("a", 1), ("z", 3)]}, weight=0.5, limit=10)
    assert {c.id: c.score for c in leg} == pytest.approx({"b": 4.0, "a": 2.0, "z": 0.5})
