"""The relations and audit aggregate of the Store contract (search/base.py), on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest

from hivemem.audit import AuditQuery
from hivemem.embedding import HashEmbedder
from hivemem.errors import AuditNotFoundError, MemoryNotFoundError
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


def test_an_audit_record_is_read_back_by_its_id(store: Store, embedder: HashEmbedder) -> None:
    store.audit(AuditEvent("merge", "m1", "p", "dave", {"merged": "m2"}))
    store.audit(AuditEvent("supersede", "m3", "p", "dave", {"superseded": "m1"}))
    first, second = store.audit_log()
    assert first.id and second.id and first.id != second.id
    assert store.audit_event(second.id).detail == {"superseded": "m1"}
    assert store.audit_event(first.id).action == "merge"
    with pytest.raises(AuditNotFoundError):
        store.audit_event("999999")
    with pytest.raises(AuditNotFoundError):
        store.audit_event("not-an-id")


def test_the_audit_log_is_queried_newest_first_by_every_filter(store: Store) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        ("forget", "m1", "p", "ann"),
        ("merge", "m2", "p", "bob"),
        ("denied", "", "q", "ann"),
        ("undo", "m2", "q", "bob"),
        ("forget", "m3", "q", "ann"),
    ]
    for hour, (action, memory_id, scope, author) in enumerate(rows):
        store.audit(AuditEvent(action, memory_id, scope, author, {"n": hour}, start + timedelta(hours=hour)))

    def numbers(**query: Any) -> list[int]:
        return [e.detail["n"] for e in store.audit_search(AuditQuery(**query))]

    assert numbers() == [4, 3, 2, 1, 0]
    assert numbers(limit=2) == [4, 3]
    assert numbers(memory_id="m2") == [3, 1]
    assert numbers(actions=("forget", "denied")) == [4, 2, 0]
    assert numbers(author="ann", scopes=["q"]) == [4, 2]
    assert numbers(since=start + timedelta(hours=1), until=start + timedelta(hours=3)) == [2, 1]
    assert numbers(scopes=["nowhere"]) == []
    with pytest.raises(ValueError, match="scopes"):
        AuditQuery(scopes=[])


def test_a_relation_is_removed_by_its_ends_and_type(store: Store, embedder: HashEmbedder) -> None:
    a, b = make(embedder, "old: builds use maven"), make(embedder, "new: builds use gradle")
    store.put(a)
    store.put(b)
    store.add_relation(Relation(b.id, a.id, RelationType.SUPERSEDES))
    store.add_relation(Relation(b.id, a.id, RelationType.RELATED_TO))
    assert store.remove_relation(Relation(b.id, a.id, RelationType.SUPERSEDES)) is True
    assert [r.type for r in store.relations(a.id)] == [RelationType.RELATED_TO]
    assert store.remove_relation(Relation(b.id, a.id, RelationType.SUPERSEDES)) is False


def test_a_relation_keeps_its_description(store: Store, embedder: HashEmbedder) -> None:
    a, b = make(embedder, "the runbook of the deploy"), make(embedder, "the decision to deploy blue-green")
    store.put(a)
    store.put(b)
    store.add_relation(Relation(a.id, b.id, RelationType.IMPLEMENTS, 0.8, "alice", description="step 3 of it"))
    store.add_relation(Relation(b.id, a.id, RelationType.RELATED_TO))
    by_type = {r.type: r for r in store.relations(a.id)}
    assert by_type[RelationType.IMPLEMENTS].description == "step 3 of it"
    assert by_type[RelationType.RELATED_TO].description == ""


def test_the_relations_of_many_memories_are_read_at_once(store: Store, embedder: HashEmbedder) -> None:
    a, b, c, d = (make(embedder, f"memory {name} of the relations batch") for name in "abcd")
    for memory in (a, b, c, d):
        store.put(memory)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    edges = [
        Relation(a.id, b.id, RelationType.RELATED_TO, created_at=start + timedelta(minutes=3)),
        Relation(b.id, c.id, RelationType.IMPLEMENTS, created_at=start + timedelta(minutes=1)),
        Relation(c.id, d.id, RelationType.RELATED_TO, created_at=start + timedelta(minutes=2)),
        Relation(a.id, c.id, RelationType.SUPERSEDES, created_at=start),  # touches both asked ends: listed once
        Relation(b.id, d.id, RelationType.RELATED_TO, created_at=start),  # touches neither
    ]
    for edge in edges:
        store.add_relation(edge)
    # Unknown ids on both sides of the real ones: the list is read in parts, and the parts make one answer.
    asked = [f"unknown-{i}" for i in range(1500)] + [a.id, c.id, a.id] + [f"unknown-{i}" for i in range(1500, 3000)]
    found = store.relations_of(asked)
    assert [(r.source_id, r.target_id, r.type) for r in found] == [
        (a.id, c.id, RelationType.SUPERSEDES),
        (b.id, c.id, RelationType.IMPLEMENTS),
        (c.id, d.id, RelationType.RELATED_TO),
        (a.id, b.id, RelationType.RELATED_TO),
    ]
    assert store.relations_of([]) == [] and store.relations_of(["unknown"]) == []
    assert store.relations(a.id) == [r for r in found if a.id in (r.source_id, r.target_id)]


def test_many_relations_are_added_at_once_or_none(store: Store, embedder: HashEmbedder) -> None:
    memories = [make(embedder, f"memory {i} of a chain of edges") for i in range(6)]
    for memory in memories:
        store.put(memory)
    chain = [Relation(a.id, b.id, RelationType.RELATED_TO) for a, b in pairwise(memories)]
    dangling = Relation(memories[0].id, "missing", RelationType.DEPENDS_ON)
    with pytest.raises(MemoryNotFoundError, match="missing"):
        store.add_relations([*chain, dangling])
    assert store.relations_of([m.id for m in memories]) == []  # none of them
    store.add_relations([*chain, chain[0]])  # a repeat is a no-op, as with add_relation
    store.add_relations([])
    found = store.relations_of([m.id for m in memories])
    assert sorted(r.key for r in found) == sorted(r.key for r in chain)


def test_many_audit_records_are_appended_in_their_order(store: Store) -> None:
    store.audit(AuditEvent("merge", "m0", "p", "ann"))
    store.audit_many([AuditEvent("archive", f"m{i}", "p", "sleep", {"n": i}) for i in range(1, 4)])
    store.audit_many([])
    log = store.audit_log()
    assert [(e.action, e.memory_id) for e in log] == [
        ("merge", "m0"),
        ("archive", "m1"),
        ("archive", "m2"),
        ("archive", "m3"),
    ]
    assert len({e.id for e in log}) == 4 and store.audit_event(log[2].id).detail == {"n": 2}
