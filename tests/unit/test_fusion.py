from __future__ import annotations

import pytest

from hivemem.fusion import Candidate, minmax_fuse, minmax_normalise, rrf_fuse


def test_minmax_normalise_spans_unit_interval_with_floor_for_minimum() -> None:
    scores = minmax_normalise([Candidate("a", 10.0), Candidate("b", 5.0), Candidate("c", 0.0)])
    assert scores == {"a": 1.0, "b": 0.5, "c": 0.001}


def test_minmax_normalise_single_or_equal_scores_are_one() -> None:
    assert minmax_normalise([Candidate("a", 3.2)]) == {"a": 1.0}
    assert minmax_normalise([Candidate("a", 2.0), Candidate("b", 2.0)]) == {"a": 1.0, "b": 1.0}
    assert minmax_normalise([]) == {}


def test_a_leg_that_ran_out_of_documents_keeps_its_weakest_candidates_share_of_the_best() -> None:
    # Two memories in a scope: without a floor the second is the minimum and scores 0.001, the
    # same as a memory that shares nothing with the query.
    two = [Candidate("a", 0.62), Candidate("b", 0.31)]
    assert minmax_normalise(two) == {"a": 1.0, "b": 0.001}
    assert minmax_normalise(two, floor=0.0) == {"a": 1.0, "b": 0.5}
    assert minmax_normalise([Candidate("a", 0.5), Candidate("b", 0.5)], floor=0.0) == {"a": 1.0, "b": 1.0}
    # A floor above the minimum changes nothing (a negative cosine stays the minimum).
    assert minmax_normalise([Candidate("a", 0.4), Candidate("b", -0.2)], floor=0.0)["b"] == 0.001
    fused = {
        f.id: f.score for f in minmax_fuse({"bm25": two, "dense": two}, {"bm25": 0.5, "dense": 0.5}, {"bm25": 0.0})
    }
    assert fused == pytest.approx({"a": 1.0, "b": 0.2505})


def test_minmax_fuse_is_weighted_mean_with_missing_leg_counted_as_zero() -> None:
    legs = {
        "bm25": [Candidate("a", 8.0), Candidate("b", 4.0), Candidate("c", 0.0)],
        "dense": [Candidate("b", 0.9), Candidate("d", 0.5), Candidate("a", 0.1)],
    }
    fused = {f.id: f for f in minmax_fuse(legs, {"bm25": 0.5, "dense": 0.5})}
    # a: bm25 1.0, dense 0.001 -> 0.5005 ; b: bm25 0.5, dense 1.0 -> 0.75 ; d: dense 0.5 only -> 0.25
    assert fused["a"].score == pytest.approx(0.5005)
    assert fused["b"].score == pytest.approx(0.75)
    assert fused["d"].score == pytest.approx(0.25)
    assert fused["c"].score == pytest.approx(0.0005)
    assert dict(fused["b"].ranks) == {"bm25": 2, "dense": 1}
    assert [f.id for f in minmax_fuse(legs, {"bm25": 0.5, "dense": 0.5})] == ["b", "a", "d", "c"]


def test_minmax_fuse_weights_shift_the_ranking() -> None:
    legs = {
        "bm25": [Candidate("a", 2.0), Candidate("b", 1.0)],
        "dense": [Candidate("b", 0.9), Candidate("a", 0.2)],
    }
    assert minmax_fuse(legs, {"bm25": 0.8, "dense": 0.2})[0].id == "a"
    assert minmax_fuse(legs, {"bm25": 0.2, "dense": 0.8})[0].id == "b"


def test_rrf_sums_reciprocal_ranks() -> None:
    legs = {"bm25": [Candidate("a", 9.0), Candidate("b", 1.0)], "dense": [Candidate("b", 0.9)]}
    fused = {f.id: f.score for f in rrf_fuse(legs, {"bm25": 1.0, "dense": 1.0}, k=60)}
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


def test_ties_break_by_id_for_stable_rankings() -> None:
    legs = {"bm25": [Candidate("z", 1.0), Candidate("m", 1.0), Candidate("a", 1.0)]}
    assert [f.id for f in minmax_fuse(legs, {"bm25": 1.0})] == ["a", "m", "z"]


def test_bad_weights_and_k_are_refused() -> None:
    legs = {"bm25": [Candidate("a", 1.0)]}
    with pytest.raises(ValueError, match="no weight"):
        minmax_fuse(legs, {})
    with pytest.raises(ValueError, match="non-negative"):
        minmax_fuse(legs, {"bm25": -1.0})
    with pytest.raises(ValueError, match="k must be"):
        rrf_fuse(legs, {"bm25": 1.0}, k=0)
