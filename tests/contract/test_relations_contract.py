"""The relations and audit aggregate of the Store contract (search/base.py), on every backend."""

from __future__ import annotations

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.errors import MemoryNotFoundError
from hivemem.model import AuditEvent, Relation, RelationType
from search import Store
from tests.contract.test_memories_contract import make


def test_relations_are_idempotent_and_need_both_ends(store: Store, embedder: HashEmbedder) -> None:
    a, b = make(embedder, "goal: ship v1 of the api"), make(embedder, "closing note: v1 shipped")
    store.put(a)
    store.put(b)
    edge = Relation(b.id, a.id, RelationType.CLOSES, strength=0.9, author="bob")
    store.add_relation(edge)
    store.add_relation(edge)
    assert [(r.source_id, r.target_id, r.type) for r in store.relations(a.id)] == [(b.id, a.id, RelationType.CLOSES)]
    with pytest.raises(MemoryNotFoundError):
        store.add_relation(Relation(a.id, "missing", RelationType.RELATED_TO))


def test_audit_records_outlive_the_memory(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "A memory that will be forgotten.")
    store.put(memory)
    store.delete(memory.id)
    store.audit(AuditEvent("forget", memory.id, "p", "carol", {"title": memory.title}))
    log = store.audit_log(memory.id)
    assert [(e.action, e.author, e.detail["title"]) for e in log] == [("forget", "carol", memory.title)]
    assert len(store.audit_log()) == 1
