"""The SQLite store's in-memory vector index: exact under every filter, in step with every writer.

Every test runs twice: with each scope's vectors scanned whole (the default for small scopes) and
with them split into clusters from 40 rows up, which is how large scopes are searched (every
cluster is read here, so the answers must still be exact). The store rescores from float32 here,
so scores are exact; the last test checks the float16 scores of the default.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

import search.sqlite.database as sqlite_database
from hivemem.embedding import HashEmbedder
from hivemem.fusion import Candidate
from hivemem.model import DuplicatePolicy, Memory, MemoryState, MemoryType
from search import SearchFilter, Store, open_store
from search.sqlite.memory_index import MemoryIndex
from search.sqlite.tuning import SQLiteTuning
from tests.contract.test_memories_contract import make

SCOPES = ["a", "b", "c"]
TAGS = ["x", "y", "z"]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def corpus(embedder: HashEmbedder, count: int, seed: int = 3) -> list[Memory]:
    rng = random.Random(seed)
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
    ]
    return [
        make(
            embedder,
            f"{' '.join(rng.sample(words, 4))} note {i}",
            scope=rng.choice(SCOPES),
            memory_type=rng.choice(list(MemoryType)),
            state=rng.choice(list(MemoryState)),
            tags=rng.sample(TAGS, rng.randint(0, 2)),
            created_at=T0 + timedelta(days=i),
        )
        for i in range(count)
    ]


def passing_scores(memories: list[Memory], query: list[float], where: SearchFilter) -> dict[str, float]:
    """Brute force in plain terms: the score of every memory that passes ``where``."""

    def passes(m: Memory) -> bool:
        return (
            m.scope in where.scopes
            and m.state in where.states
            and (not where.memory_types or m.memory_type in where.memory_types)
            and (not where.tags or bool(set(where.tags) & set(m.tags)))
            and (where.created_after is None or m.created_at >= where.created_after)
            and (where.created_before is None or m.created_at < where.created_before)
            and m.id not in where.exclude_ids
        )

    q = np.asarray(query, dtype=np.float64)
    return {m.id: float(np.asarray(m.embedding, dtype=np.float64) @ q) for m in memories if passes(m)}


def assert_exact(
    found: list[Candidate], memories: list[Memory], query: list[float], where: SearchFilter, limit: int
) -> None:
    """``found`` is an exact top-``limit``: only passing memories, true scores, none better left out.

    Which of several memories tied at the cut-off is returned is the store's choice (by id), so
    the check is on scores, not on the order of tied ids.
    """
    truth = passing_scores(memories, query, where)
    best = sorted(truth.values(), reverse=True)[:limit]
    assert len(found) == len(best), where
    assert len({c.id for c in found}) == len(found)
    for candidate, expected in zip(found, best, strict=True):
        assert candidate.id in truth, f"{candidate.id} does not pass {where}"
        assert candidate.score == pytest.approx(truth[candidate.id], abs=1e-5)
        assert candidate.score == pytest.approx(expected, abs=1e-5)


_CLUSTERED_FROM = {"scan": 20_000, "clusters": 40}
_layout = ["scan"]


@pytest.fixture(autouse=True, params=sorted(_CLUSTERED_FROM))
def vector_layout(request: pytest.FixtureRequest) -> Iterator[str]:
    _layout[0] = request.param
    yield request.param
    _layout[0] = "scan"


def open_file(path: Path, embedder: HashEmbedder) -> Store:
    return open_store(
        f"sqlite:///{path}",
        embedding_model=embedder.model_id,
        dimension=embedder.dimension,
        sqlite_tuning=SQLiteTuning(
            vector_cluster_min_rows=_CLUSTERED_FROM[_layout[0]],
            vector_probe_rows=100_000,
            vector_probe_share=1.0,
            vector_rescore=True,
        ),
    )


@contextmanager
def filled(path: Path, embedder: HashEmbedder, count: int) -> Iterator[tuple[Store, list[Memory]]]:
    """A store file holding ``corpus(count)``, closed afterwards."""
    memories = corpus(embedder, count)
    store = open_file(path, embedder)
    try:
        for m in memories:
            store.put(m)
        yield store, memories
    finally:
        store.close()


def test_every_filter_gives_the_exact_answer(tmp_path: Path, embedder: HashEmbedder) -> None:
    with filled(tmp_path / "hive.db", embedder, 300) as (store, memories):
        filters = [
            SearchFilter(scopes=["a"]),
            SearchFilter(scopes=["a", "c"], states=list(MemoryState)),
            SearchFilter(scopes=SCOPES, memory_types=[MemoryType.DECISION, MemoryType.BUG_FIX]),
            SearchFilter(scopes=SCOPES, tags=["x"]),
            SearchFilter(scopes=["b"], created_after=T0 + timedelta(days=100), created_before=T0 + timedelta(days=200)),
            SearchFilter(scopes=SCOPES, exclude_ids=[m.id for m in memories[:150]]),
            SearchFilter(scopes=["nowhere"]),
        ]
        for where in filters:
            for text in ["alpha bravo", "kilo lima mike note", "echo"]:
                query = embedder.embed_queries([text])[0]
                assert_exact(store.vector_search(query, where, 10), memories, query, where, 10)


def test_rewrites_moves_and_deletes_are_seen_by_another_process(tmp_path: Path, embedder: HashEmbedder) -> None:
    memories = corpus(embedder, 60)
    reader, writer = open_file(tmp_path / "hive.db", embedder), open_file(tmp_path / "hive.db", embedder)
    try:
        for m in memories:
            writer.put(m)
        query = embedder.embed_queries(["alpha bravo charlie"])[0]
        everything = SearchFilter(scopes=SCOPES, states=list(MemoryState))
        assert_exact(reader.vector_search(query, everything, 60), memories, query, everything, 60)
        # Another scope, another state, no vector, gone: each change must reach the reader's index.
        moved = replace(memories[0], scope="c" if memories[0].scope != "c" else "a")
        archived = replace(memories[1], state=MemoryState.ARCHIVED)
        bare = replace(memories[2], embedding=None)
        for changed in (moved, archived, bare):
            writer.put(changed, DuplicatePolicy.OVERWRITE)
        writer.delete(memories[3].id)
        now = [moved, archived, *memories[4:]]
        for where in (everything, SearchFilter(scopes=[moved.scope]), SearchFilter(scopes=SCOPES)):
            assert_exact(reader.vector_search(query, where, 60), now, query, where, 60)
    finally:
        reader.close()
        writer.close()


def test_a_reader_behind_a_pruned_log_reloads_everything(
    tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_database, "_CHANGES_KEPT", 5)
    monkeypatch.setattr(sqlite_database, "_PRUNE_EVERY", 10)
    memories = corpus(embedder, 80)
    reader, writer = open_file(tmp_path / "hive.db", embedder), open_file(tmp_path / "hive.db", embedder)
    try:
        where = SearchFilter(scopes=SCOPES)
        query = embedder.embed_queries(["golf hotel"])[0]
        writer.put(memories[0])
        assert len(reader.vector_search(query, where, 5)) <= 1  # the reader has synced once
        for m in memories[1:]:
            writer.put(m)
        assert writer.count() == 80
        assert_exact(reader.vector_search(query, where, 20), memories, query, where, 20)
    finally:
        reader.close()
        writer.close()


def test_concurrent_searches_with_different_filters_each_get_their_own_answer(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    with filled(tmp_path / "hive.db", embedder, 200) as (store, memories):
        asks = [
            (embedder.embed_queries([text])[0], SearchFilter(scopes=[scope]))
            for text in ["alpha", "bravo delta", "mike lima", "india"]
            for scope in SCOPES
        ] * 4
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(lambda ask: store.vector_search(ask[0], ask[1], 7), asks))
        for (query, where), found in zip(asks, answers, strict=True):
            assert_exact(found, memories, query, where, 7)


def test_without_rescoring_the_float16_scores_are_within_a_thousandth(tmp_path: Path, embedder: HashEmbedder) -> None:
    memories = corpus(embedder, 300)
    store = open_store(
        f"sqlite:///{tmp_path / 'hive.db'}",
        embedding_model=embedder.model_id,
        dimension=embedder.dimension,
        sqlite_tuning=SQLiteTuning(vector_cluster_min_rows=_CLUSTERED_FROM[_layout[0]]),
    )
    try:
        for m in memories:
            store.put(m)
        for text in ["alpha bravo", "kilo lima mike note", "echo"]:
            query = embedder.embed_queries([text])[0]
            where = SearchFilter(scopes=SCOPES)
            truth = passing_scores(memories, query, where)
            best = sorted(truth.values(), reverse=True)[:10]
            found = store.vector_search(query, where, 10)
            assert len(found) == 10
            for candidate in found:
                assert candidate.score == pytest.approx(truth[candidate.id], abs=1e-3)
                # Nothing left out beats what came back by more than the codes' error.
                assert truth[candidate.id] >= best[-1] - 2e-3
    finally:
        store.close()


def test_a_loaded_index_takes_a_bulk_in_with_the_write_not_at_the_next_search(
    tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Left to the next search, a bulk's rows were applied while every recall that came in waited.
    memories = corpus(embedder, 200)
    store = open_file(tmp_path / "hive.db", embedder)
    try:
        store.put_many(memories[:1])
        assert not store._index.loaded  # type: ignore[attr-defined]  # a write alone loads nothing
        store.warm()
        store.put_many(memories[1:])
        applied: list[int] = []
        original = MemoryIndex._put
        monkeypatch.setattr(
            MemoryIndex, "_put", lambda index, rowid, *rest: applied.append(rowid) or original(index, rowid, *rest)
        )
        query = embedder.embed_queries(["india juliet"])[0]
        where = SearchFilter(scopes=SCOPES)
        with ThreadPoolExecutor(1) as other_thread:  # a request thread of its own connection
            found = other_thread.submit(store.vector_search, query, where, 20).result()
        assert_exact(found, memories, query, where, 20)
        assert applied == []
    finally:
        store.close()
