"""Pseudo-relevance feedback (hivemem/expansion.py): Rocchio's blend, unit length, and no-ops."""

from __future__ import annotations

import math

import pytest

from hivemem.expansion import prf_vector


def test_the_query_moves_toward_the_centroid_of_the_feedback() -> None:
    expanded = prf_vector([1.0, 0.0, 0.0], [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], 1.0)
    # 1 * q + 1 * centroid = (1, 0.5, 0.5), normalised.
    norm = math.sqrt(1.5)
    assert expanded == pytest.approx([1 / norm, 0.5 / norm, 0.5 / norm])
    assert math.fsum(x * x for x in expanded) == pytest.approx(1.0)


def test_no_feedback_or_no_weight_leaves_the_query() -> None:
    assert prf_vector([0.6, 0.8], [], 0.5) == [0.6, 0.8]
    assert prf_vector([0.6, 0.8], [[1.0, 0.0]], 0.0) == [0.6, 0.8]
    # Feedback that cancels the query exactly leaves the query rather than a zero vector.
    assert prf_vector([1.0, 0.0], [[-1.0, 0.0]], 1.0) == [1.0, 0.0]
