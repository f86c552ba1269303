"""The in-memory BM25 leg scores exactly as FTS5's bm25() does, through writes, filters and processes."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.model import DuplicatePolicy, Memory, MemoryState, MemoryType
from search import SearchFilter, open_store
from search.sqlite import SQLiteStore
from tests.contract.test_memories_contract import make

WORDS = (  # noqa: SIM905 - one line of words reads better than 39 quoted ones
    "deploy deploying deployment café naïve cache caching caches token tokens expire expired queue "
    "queues worker workers index indexes indexing scope scopes memory memories recall recalled the a "
    "of to and build builds built release releases rollback certificate rotate rotated"
).split()
QUERIES = [
    "deploying the release",
    "cafe naive caching",
    "token expiry and certificates",
    "workers drain the queue",
    "index memory recall scope",
    "rollback",
    "the",
    "build built builds",
    "nothing matches zzzz",
]


def corpus(embedder: HashEmbedder, count: int, seed: int = 5) -> list[Memory]:
    rng = random.Random(seed)
    return [
        make(
            embedder,
            " ".join(rng.choices(WORDS, k=rng.randint(3, 30))) + f" note {i}",
            title=" ".join(rng.choices(WORDS, k=rng.randint(1, 6))),
            scope=rng.choice(["a", "b"]),
            tags=rng.sample(["ops", "db", "auth"], rng.randint(0, 2)),
            memory_type=rng.choice([MemoryType.FACT, MemoryType.DECISION]),
            state=rng.choice([MemoryState.WORKING, MemoryState.ARCHIVED]),
        )
        for i in range(count)
    ]


def assert_same_as_fts(store: SQLiteStore, where: SearchFilter, limit: int = 50) -> None:
    for text in QUERIES:
        ours = store.keyword_search(text, where, limit)
        fts = store._fts_search(text, where, limit)
        assert len(ours) == len(fts), text
        assert [c.score for c in ours] == pytest.approx([c.score for c in fts], rel=1e-9), text
        by_id = {c.id: c.score for c in fts}
        # Rows tied on score may be cut at a different place only if the scores are equal.
        for c in ours:
            assert c.id in by_id or c.score == pytest.approx(fts[-1].score, rel=1e-9), text


def open_file(path: Path, embedder: HashEmbedder) -> SQLiteStore:
    store = open_store(f"sqlite:///{path}", embedding_model=embedder.model_id, dimension=embedder.dimension)
    assert isinstance(store, SQLiteStore)
    return store


FILTERS = [
    SearchFilter(scopes=["a"]),
    SearchFilter(scopes=["a", "b"], states=list(MemoryState)),
    SearchFilter(scopes=["b"], memory_types=[MemoryType.DECISION], tags=["ops"]),
    SearchFilter(scopes=["a", "nowhere"]),
]


def test_scores_and_order_match_fts5_under_every_filter(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = open_file(tmp_path / "hive.db", embedder)
    try:
        for m in corpus(embedder, 250):
            store.put(m)
        for where in FILTERS:
            assert_same_as_fts(store, where)
    finally:
        store.close()


def test_rewrites_and_deletes_by_another_process_keep_scores_exact(tmp_path: Path, embedder: HashEmbedder) -> None:
    reader, writer = open_file(tmp_path / "hive.db", embedder), open_file(tmp_path / "hive.db", embedder)
    try:
        memories = corpus(embedder, 120)
        for m in memories[:60]:
            writer.put(m)
        assert_same_as_fts(reader, FILTERS[1])  # the reader loads from the FTS5 index
        for m in memories[60:]:
            writer.put(m)  # the reader tokenizes these itself
        writer.put(
            replace(memories[0], content="rotated certificate rollback rollback", title="rollback"),
            DuplicatePolicy.OVERWRITE,
        )
        writer.put(replace(memories[1], scope="b" if memories[1].scope == "a" else "a"), DuplicatePolicy.OVERWRITE)
        for m in memories[2:40]:
            writer.delete(m.id)
        for where in FILTERS:
            assert_same_as_fts(reader, where)
    finally:
        reader.close()
        writer.close()


def test_a_word_of_several_tokens_is_a_phrase_and_goes_to_fts5(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = open_file(tmp_path / "hive.db", embedder)
    try:
        store.put(make(embedder, "the build_cache lives in S3"))
        store.put(make(embedder, "cache build order"))
        found = store.keyword_search("build_cache", SearchFilter(scopes=["p"]), 10)
        assert [c.id for c in found] == [c.id for c in store._fts_search("build_cache", SearchFilter(scopes=["p"]), 10)]
        assert len(found) == 1  # the phrase "build cache" in that order
    finally:
        store.close()


def test_rewritten_rows_do_not_grow_the_postings_without_bound(tmp_path: Path, embedder: HashEmbedder) -> None:
    reader, writer = open_file(tmp_path / "hive.db", embedder), open_file(tmp_path / "hive.db", embedder)
    try:
        memories = corpus(embedder, 20)
        for m in memories:
            writer.put(m)
        for round_ in range(300):  # reinforcement rewrites a row each time a duplicate arrives
            writer.put(replace(memories[0], access_count=round_ + 1), DuplicatePolicy.OVERWRITE)
            if round_ % 50 == 0:
                assert_same_as_fts(reader, FILTERS[1])
            else:
                reader.keyword_search("rollback", FILTERS[1], 5)  # the reader applies each rewrite
        assert_same_as_fts(reader, FILTERS[1])
        for partition in reader._index._partitions.values():
            assert partition.postings.entries <= 4 * max(1, partition.tokens) + 64
    finally:
        reader.close()
        writer.close()
