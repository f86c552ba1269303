"""What the contract suite does not show about the OpenSearch store's second-model vectors: the
write stamps that tell the filler what changed, writers whose clocks run behind, paging, and the
index per model (search/opensearch/second_vectors.py)."""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.model import DuplicatePolicy, utcnow
from search.opensearch import second_vectors
from search.opensearch.docs import STAMP_FIELD
from tests.contract.test_second_vectors_contract import MODEL, SECOND, make
from tests.contract.test_second_vectors_contract import second_vectors as vectors_of
from tests.opensearch_backend import OpenSearchBackend
from tests.opensearch_spec import SpecValidator

pytestmark = pytest.mark.opensearch


@pytest.fixture
def store(opensearch_backend: OpenSearchBackend, spec_validator: SpecValidator | None) -> Iterator[Any]:
    opened = opensearch_backend.open(HashEmbedder(64), Settings(), spec_validator)
    yield opened
    opened.drop()


def stamp(store: Any, memory_id: str) -> int:
    doc = store.client.get(index=store.names.memories, id=memory_id)
    return int(doc["_source"][STAMP_FIELD])


def writing_at(monkeypatch: pytest.MonkeyPatch, offset_s: float) -> None:
    """Memory documents written from now on carry the stamp of a clock ``offset_s`` off."""
    clock = types.SimpleNamespace(time=lambda: time.time() + offset_s)
    monkeypatch.setattr("search.opensearch.docs.time", clock)


def test_an_access_keeps_the_stamp_and_a_rewrite_renews_it(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    writing_at(monkeypatch, -3600)
    memory = make("the deploy runs at noon")
    store.put(memory)
    written = stamp(store, memory.id)
    store.record_access([memory.id], utcnow())
    assert store.get(memory.id).access_count == 1
    assert stamp(store, memory.id) == written
    monkeypatch.undo()
    changed = replace(memory, content="the deploy runs at midnight", content_hash=content_hash("at midnight"))
    store.put(changed, DuplicatePolicy.OVERWRITE)
    assert stamp(store, memory.id) >= written + 3_500_000


def test_a_writer_whose_clock_is_behind_is_found_within_the_slack(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make("written before the first look")
    store.put(first)
    assert [m.id for m in store.second_vectors_pending(MODEL, 10)] == [first.id]
    store.put_second_vectors(MODEL, SECOND.dimension, vectors_of([first]))
    assert store.second_vectors_pending(MODEL, 10) == []
    writing_at(monkeypatch, -second_vectors.SLACK_MS / 2000)  # half the slack behind
    behind = make("written by a worker whose clock is a minute slow")
    store.put(behind)
    assert [m.id for m in store.second_vectors_pending(MODEL, 10)] == [behind.id]


def test_a_writer_far_behind_is_found_by_the_next_full_look(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert store.second_vectors_pending(MODEL, 10) == []  # the first look, over an empty store
    writing_at(monkeypatch, -86_400)
    lost = make("written by a machine whose clock is a day slow")
    store.put(lost)
    monkeypatch.undo()
    assert store.second_vectors_pending(MODEL, 10) == []  # stamped before the last look began
    monkeypatch.setattr(second_vectors, "FULL_LOOK_S", 0.0)
    assert [m.id for m in store.second_vectors_pending(MODEL, 10)] == [lost.id]


def test_looks_page_through_the_memories(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(second_vectors, "_PAGE", 2)
    memories = [make(f"memory on page {n}") for n in range(5)]
    store.put_many(memories)
    named: list[str] = []
    while batch := store.second_vectors_pending(MODEL, 3):
        assert len(batch) <= 3
        named += [m.id for m in batch]
        store.put_second_vectors(MODEL, SECOND.dimension, vectors_of(batch))
    assert sorted(named) == sorted(m.id for m in memories)
    assert store.second_vectors_remaining(MODEL) == 0


def test_each_model_has_an_index_without_a_knn_field_and_drop_deletes_them(
    opensearch_backend: OpenSearchBackend, spec_validator: SpecValidator | None
) -> None:
    store = opensearch_backend.open(HashEmbedder(64), Settings(), spec_validator)
    try:
        memory = make("kept by two second models")
        store.put(memory)
        other = HashEmbedder(16)
        store.put_second_vectors(MODEL, SECOND.dimension, vectors_of([memory]))
        store.put_second_vectors(other.model_id, other.dimension, [(memory, other.embed_passages(["x"])[0])])
        indices = store.client.indices.get(index=f"{store.names.memories}-second-*")
        assert len(indices) == 2
        for body in indices.values():
            assert body["mappings"]["properties"]["embedding"] == {"type": "binary"}
            assert body["settings"]["index"].get("knn") in (None, "false", False)
    finally:
        store.drop()
    assert store_indices_left(opensearch_backend, store.names.memories) == {}


def store_indices_left(backend: OpenSearchBackend, prefix: str) -> dict[str, Any]:
    from opensearchpy import OpenSearch

    client = OpenSearch([backend.url.replace("opensearch+", "")])
    try:
        return dict(client.indices.get(index=f"{prefix}*", allow_no_indices=True, ignore_unavailable=True))
    finally:
        client.close()
