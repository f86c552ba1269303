"""What only a file-backed store can show: reopening, model checks, bad paths, many processes."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.errors import ConfigError, EmbeddingMismatchError, StoreUnavailableError
from hivemem.model import DuplicatePolicy
from search import SearchFilter, open_store
from tests.contract.test_memories_contract import make


def test_reopen_reads_everything_back(tmp_path: Path, embedder: HashEmbedder) -> None:
    url = f"sqlite:///{tmp_path / 'hive.db'}"
    store = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    memories = [make(embedder, f"persistent memory number {i}") for i in range(5)]
    for m in memories:
        store.put(m)
    store.close()
    reopened = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    assert reopened.count() == 5
    assert reopened.get(memories[3].id).content == "persistent memory number 3"
    assert reopened.keyword_search("persistent", SearchFilter(scopes=["p"]), 10)
    reopened.close()


def test_wal_mode_is_on(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "hive.db"
    open_store(f"sqlite:///{path}", embedding_model=embedder.model_id, dimension=embedder.dimension).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_other_model_or_dimension_is_refused(tmp_path: Path, embedder: HashEmbedder) -> None:
    url = f"sqlite:///{tmp_path / 'hive.db'}"
    open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension).close()
    with pytest.raises(EmbeddingMismatchError, match="hash-64"):
        open_store(url, embedding_model="other-model", dimension=embedder.dimension)
    with pytest.raises(EmbeddingMismatchError):
        open_store(url, embedding_model=embedder.model_id, dimension=128)


def test_directory_or_garbage_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match="directory"):
        open_store(f"sqlite:///{tmp_path}", embedding_model="m", dimension=8)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreUnavailableError, match="not a database"):
        open_store(f"sqlite:///{garbage}", embedding_model="m", dimension=8)


@pytest.mark.parametrize("url", ["postgres://x/y", "nonsense", "sqlite://host/path.db"])
def test_unknown_urls_name_the_accepted_schemes(url: str) -> None:
    with pytest.raises(ConfigError, match="sqlite"):
        open_store(url, embedding_model="m", dimension=8)


def test_a_database_of_another_schema_version_is_refused(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "hive.db"
    open_store(f"sqlite:///{path}", embedding_model=embedder.model_id, dimension=embedder.dimension).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(StoreUnavailableError, match="schema version 1"):
        open_store(f"sqlite:///{path}", embedding_model=embedder.model_id, dimension=embedder.dimension)


def test_vectors_written_by_another_process_are_seen(tmp_path: Path, embedder: HashEmbedder) -> None:
    url = f"sqlite:///{tmp_path / 'hive.db'}"
    reader = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    writer = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    try:
        memory = make(embedder, "alpha bravo charlie")
        writer.put(memory)
        where = SearchFilter(scopes=["p"])
        assert reader.vector_search(memory.embedding or [], where, 1)[0].score == pytest.approx(1.0, abs=2e-3)
        # The other connection rewrites the vector: the reader's cached copy must not be used.
        other = make(embedder, "delta echo foxtrot")
        writer.put(replace(memory, embedding=other.embedding), DuplicatePolicy.OVERWRITE)
        assert reader.vector_search(other.embedding or [], where, 1)[0].score == pytest.approx(1.0, abs=2e-3)
        writer.delete(memory.id)
        assert reader.vector_search(other.embedding or [], where, 1) == []
    finally:
        reader.close()
        writer.close()


def test_a_database_from_before_relation_descriptions_gains_the_column(tmp_path: Path, embedder: HashEmbedder) -> None:
    from hivemem.model import Relation, RelationType

    path = tmp_path / "hive.db"
    url = f"sqlite:///{path}"
    store = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    a, b = make(embedder, "an older memory"), make(embedder, "another older memory")
    store.put(a)
    store.put(b)
    store.add_relation(Relation(a.id, b.id, RelationType.RELATED_TO))
    store.close()
    with sqlite3.connect(path) as conn:  # the table as the release before wrote it
        conn.execute("ALTER TABLE relations DROP COLUMN description")
    reopened = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    try:
        (edge,) = reopened.relations(a.id)
        assert (edge.target_id, edge.description) == (b.id, "")
        reopened.add_relation(Relation(b.id, a.id, RelationType.EXTENDS, description="newer"))
        assert {r.description for r in reopened.relations(a.id)} == {"", "newer"}
    finally:
        reopened.close()


def test_a_database_from_before_threads_gains_the_column_and_its_index(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "hive.db"
    url = f"sqlite:///{path}"
    store = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    older = make(embedder, "a memory from before threads")
    store.put(older)
    store.close()
    with sqlite3.connect(path) as conn:  # the table as the release before wrote it
        conn.execute("DROP INDEX memories_thread")
        conn.execute("DROP INDEX memories_thread_members")
        conn.execute("ALTER TABLE memories DROP COLUMN thread")
    reopened = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    try:
        assert reopened.get(older.id).thread == ""
        first, second = make(embedder, "first turn", thread="t"), make(embedder, "second turn", thread="t")
        reopened.put(first)
        reopened.put(second)
        assert reopened.thread_neighbours([first.id, older.id], 1) == {first.id: [(second.id, 1)]}
    finally:
        reopened.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'memories_thread'").fetchone()
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'memories_thread_members'").fetchone()
