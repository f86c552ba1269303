"""The BM25 scale a store reads from its cluster's version."""

from __future__ import annotations

import pytest

from search.opensearch.similarity import LEGACY_BM25_K1, bm25_scale_of


@pytest.mark.parametrize(
    ("number", "scale"),
    [("2.19.1", 1.0 + LEGACY_BM25_K1), ("1.3.20", 1.0 + LEGACY_BM25_K1), ("3.0.0", 1.0), ("3.8.0", 1.0)],
)
def test_legacy_bm25_before_3_modern_after(number: str, scale: float) -> None:
    assert bm25_scale_of({"version": {"number": number}}) == pytest.approx(scale)


@pytest.mark.parametrize("info", [{}, {"version": "odd"}, {"version": {"number": "x.y"}}])
def test_an_unreadable_version_is_taken_as_modern(info: dict[str, object]) -> None:
    assert bm25_scale_of(info) == 1.0
