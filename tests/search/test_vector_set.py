"""One scope's vectors (search/sqlite/vector_set.py): a scan that is split into clusters as it grows,
filtered by a bitmap inside either, with dead labels left out and compacted away."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from search.sqlite.tuning import SQLiteTuning
from search.sqlite.vector_set import VectorSet, clusters_for, training_rows

DIM = 32
F32 = npt.NDArray[np.float32]


def unit_rows(rng: np.random.Generator, count: int) -> F32:
    rows = rng.normal(size=(count, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def clustered(rng: np.random.Generator, count: int, centres: int) -> F32:
    """Vectors crowded around a few centres, as near-duplicate memories are."""
    middle = unit_rows(rng, centres)
    rows = middle[rng.integers(0, centres, size=count)] + rng.normal(0, 0.05, size=(count, DIM)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def filled(rows: F32, params: SQLiteTuning) -> VectorSet:
    """A set fed in pieces, as writes arrive, maintained after each piece."""
    vectors = VectorSet(DIM, params)
    for start in range(0, len(rows), 100):
        vectors.add(rows[start : start + 100], np.arange(start, min(start + 100, len(rows)), dtype=np.int64))
        relabel = vectors.maintain()
        if relabel is not None:  # nothing was dead: every label kept, in order
            assert relabel.tolist() == list(range(vectors.total))
    return vectors


def brute_top(rows: F32, query: F32, k: int, passing: npt.NDArray[np.bool_] | None = None) -> set[int]:
    scores = rows @ query
    if passing is not None:
        scores = np.where(passing, scores, -np.inf)
    return set(np.argsort(-scores)[:k].tolist())


def recall_at_10(rows: F32, queries: F32, vectors: VectorSet, passing: npt.NDArray[np.bool_] | None = None) -> float:
    bitmap, count = vectors.passing(passing)
    found = vectors.search(queries, bitmap, count, 10)
    return float(
        np.mean(
            [
                len(set(s.tolist()) & brute_top(rows, q, 10, passing)) / 10
                for q, (s, _) in zip(queries, found, strict=True)
            ]
        )
    )


def test_a_scan_is_exact_under_a_filter() -> None:
    rng = np.random.default_rng(1)
    rows = unit_rows(rng, 500)
    vectors = filled(rows, SQLiteTuning())
    assert not vectors.clustered
    passing_slots = rng.random(500) < 0.3
    bitmap, passing = vectors.passing(passing_slots)
    assert passing == int(passing_slots.sum())
    for query in unit_rows(rng, 10):
        slots, scores = vectors.search(query[None, :], bitmap, passing, 10)[0]
        assert set(slots.tolist()) == brute_top(rows, query, 10, passing_slots)
        assert scores[0] == pytest.approx(float(rows[slots[0]] @ query), abs=2e-3)  # float16 codes


def test_a_set_grown_past_its_size_is_clustered_and_keeps_every_row() -> None:
    rng = np.random.default_rng(0)
    rows = clustered(rng, 3_000, 30)
    vectors = filled(rows, SQLiteTuning(vector_cluster_min_rows=1_000, vector_probe_rows=1_200))
    assert vectors.clustered and vectors.total == vectors.live == 3_000
    # Random centres in 32 dimensions are harder to cluster than real embeddings (the bench measures
    # those); a search that read the wrong clusters would find under half of them.
    assert recall_at_10(rows, clustered(rng, 50, 30), vectors) >= 0.98


def test_clusters_are_trained_again_as_the_set_grows_fourfold() -> None:
    rng = np.random.default_rng(6)
    rows = clustered(rng, 4_400, 30)
    vectors = VectorSet(DIM, SQLiteTuning(vector_cluster_min_rows=1_000))
    vectors.add(rows[:1_000], np.arange(1_000, dtype=np.int64))
    assert vectors.maintain() is not None and vectors.clustered
    vectors.add(rows[1_000:3_999], np.arange(1_000, 3_999, dtype=np.int64))
    assert vectors.maintain() is None  # under four times the rows it was trained for
    vectors.add(rows[3_999:], np.arange(3_999, 4_400, dtype=np.int64))
    assert vectors.maintain() is not None
    assert recall_at_10(rows, clustered(rng, 30, 30), vectors) >= 0.99


def test_a_set_loaded_at_its_size_starts_clustered_from_a_sample() -> None:
    rng = np.random.default_rng(2)
    rows = clustered(rng, 6_000, 60)
    vectors = VectorSet(DIM, SQLiteTuning(vector_cluster_min_rows=1_000, vector_probe_rows=600))
    sample = rows[rng.choice(6_000, training_rows(6_000), replace=False)]
    vectors.start_clustered(sample, 6_000)
    vectors.add(rows, np.arange(6_000, dtype=np.int64))
    assert vectors.maintain() is None and vectors.clustered
    assert recall_at_10(rows, clustered(rng, 50, 60), vectors) >= 0.99


@pytest.mark.parametrize("share", [0.5, 0.05])
def test_a_filtered_clustered_set_returns_only_passing_rows(share: float) -> None:
    """Half the rows passing: more clusters read; a twentieth: every cluster, an exact scan."""
    rng = np.random.default_rng(3)
    rows = clustered(rng, 4_000, 40)
    vectors = filled(rows, SQLiteTuning(vector_cluster_min_rows=200, vector_probe_rows=400))
    passing_slots = rng.random(4_000) < share
    bitmap, passing = vectors.passing(passing_slots)
    queries = clustered(rng, 30, 40)
    for slots, _ in vectors.search(queries, bitmap, passing, 10):
        assert passing_slots[slots].all()
    assert recall_at_10(rows, queries, vectors, passing_slots) >= 0.99


def test_dead_labels_are_never_found_and_are_compacted_away() -> None:
    rng = np.random.default_rng(4)
    rows = clustered(rng, 3_000, 30)
    vectors = filled(rows, SQLiteTuning(vector_cluster_min_rows=500, vector_probe_rows=1_000))
    for label in range(2_000):
        vectors.kill(label)
    assert vectors.live == 1_000
    bitmap, passing = vectors.passing(None)
    assert passing == 1_000
    slots, _ = vectors.search(rows[:1], bitmap, passing, 10)[0]
    assert slots.min() >= 2_000
    relabel = vectors.maintain()
    assert relabel is not None
    assert vectors.total == vectors.live == 1_000 and vectors.clustered
    assert (relabel[:2_000] == -1).all() and relabel[2_000:].tolist() == list(range(1_000))
    bitmap, passing = vectors.passing(None)
    for query, (slots, _) in zip(
        rows[2_000:2_020], vectors.search(rows[2_000:2_020], bitmap, passing, 10), strict=True
    ):
        assert set(slots.tolist()) == {2_000 + i for i in brute_top(rows[2_000:], query, 10)}


def test_a_label_holds_its_vector_as_float16() -> None:
    rng = np.random.default_rng(5)
    rows = unit_rows(rng, 3)
    vectors = filled(rows, SQLiteTuning())
    assert vectors.holds(1, rows[1])
    assert not vectors.holds(1, rows[2])


def test_cluster_counts_follow_the_square_root_and_leave_points_to_train() -> None:
    assert clusters_for(100_000) == 1_265
    assert clusters_for(1_000_000) == 4_000
    assert clusters_for(20_000) == 20_000 // 40
    assert training_rows(1_000_000) == 4_000 * 40
