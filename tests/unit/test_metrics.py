from __future__ import annotations

import math

import pytest

from bench.suite.metrics import hit_at, ndcg_at, percentile, recall_at, reciprocal_rank


def test_hit_and_mrr() -> None:
    ranked = ["a", "b", "c"]
    assert hit_at(ranked, {"c"}, 2) == 0.0
    assert hit_at(ranked, {"c"}, 3) == 1.0
    assert reciprocal_rank(ranked, {"b", "c"}) == 0.5
    assert reciprocal_rank(ranked, {"z"}) == 0.0


def test_ndcg_and_recall() -> None:
    assert ndcg_at(["a", "b"], {"a": 1.0}, 10) == 1.0
    assert ndcg_at(["b", "a"], {"a": 1.0}, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg_at(["x"], {}, 10) == 0.0
    assert recall_at(["a", "x"], {"a", "b"}, 100) == 0.5


def test_a_percentile_is_a_measured_value_nearest_to_the_quantile() -> None:
    hundred = [float(n) for n in range(100, 0, -1)]  # unsorted on purpose
    assert percentile(hundred, 0.95) == 95.0  # index round(0.95 * 99) = 94 of 1..100
    assert percentile(hundred, 0.5) == 51.0 and percentile(hundred, 0.0) == 1.0 and percentile(hundred, 1.0) == 100.0
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([1.0, 2.0], 0.95) == 2.0  # never a blend of two values
