"""The pure consolidation policy: who becomes the parent, what the sources become, how sleep clusters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hivemem.codec import memory_from_json, memory_to_json
from hivemem.consolidation import clusters, consolidate, insight_from, parent_importance
from hivemem.hashing import content_hash
from hivemem.model import Link, Memory, MemoryState, MemoryType, RelationType, Source

NOW = datetime(2026, 7, 1, tzinfo=UTC)


def memory(memory_id: str, content: str, importance: float = 0.5, **kw: object) -> Memory:
    return Memory(
        id=memory_id,
        scope="p",
        title=str(kw.pop("title", content[:30])),
        content=content,
        content_hash=content_hash(content),
        importance=importance,
        created_at=NOW - timedelta(days=1),
        updated_at=NOW - timedelta(days=1),
        **kw,  # type: ignore[arg-type]
    )


def test_sources_are_muted_and_linked_and_the_parent_lifted() -> None:
    parent = memory("lesson", "Lesson learned.", 0.3)
    sources = [memory("a", "Finding A.", 0.6), memory("b", "Finding B.", 0.95)]
    plan = consolidate(parent, sources, NOW, author="alice", reason="goal closed")
    assert plan.parent.importance == 1.0  # min(1, 0.95 x 1.1)
    assert [(m.state, m.importance) for m in plan.sources] == [
        (MemoryState.CONSOLIDATED, 0.12),
        (MemoryState.CONSOLIDATED, 0.19),
    ]
    assert [(r.source_id, r.target_id, r.type) for r in plan.relations] == [
        ("lesson", "a", RelationType.DERIVED_FROM),
        ("lesson", "b", RelationType.DERIVED_FROM),
    ]
    assert [m.id for m in plan.writes] == ["a", "b", "lesson"]  # sources first
    assert plan.audit.action == "consolidate" and plan.audit.memory_id == "lesson"
    assert [s["importance"] for s in plan.audit.detail["sources"]] == [0.6, 0.95]
    assert plan.audit.detail["created_parent"] is False


def test_a_parent_keeps_its_own_importance_when_that_is_higher() -> None:
    assert parent_importance(memory("p", "Parent.", 0.9), [memory("a", "A source.", 0.2)]) == 0.9


def test_nothing_or_the_parent_itself_cannot_be_consolidated() -> None:
    parent = memory("p", "Parent.")
    with pytest.raises(ValueError, match="nothing"):
        consolidate(parent, [], NOW, author="a", reason="r")
    with pytest.raises(ValueError, match="itself"):
        consolidate(parent, [parent], NOW, author="a", reason="r")


def test_clusters_take_the_seeds_neighbours_without_chaining() -> None:
    a, b, c, d = (memory(i, f"memory {i}", 0.9 if i == "a" else 0.5) for i in "abcd")
    near = {
        "a": [("b", 0.9), ("c", 0.88)],
        "b": [("a", 0.9), ("d", 0.95)],
        "c": [("a", 0.88)],
        "d": [("b", 0.95)],
    }
    # a seeds first (most important) and takes b and c; d was near b only, so it stays out.
    assert [[m.id for m in g] for g in clusters([a, b, c, d], near, threshold=0.85, min_size=3)] == [["a", "b", "c"]]
    # At 0.89, a holds only b; b then seeds and takes a and d.
    assert [[m.id for m in g] for g in clusters([a, b, c, d], near, threshold=0.89, min_size=3)] == [["b", "a", "d"]]
    assert [[m.id for m in g] for g in clusters([a, b, c, d], near, threshold=0.89, min_size=2)] == [
        ["a", "b"],
    ]


def test_an_insight_holds_each_distinct_statement_once() -> None:
    sources = [
        memory("a", "Rate limit is 100 per minute. Clients get 429.", 0.7, tags=["api"], source=Source.USER_CONFIRMED),
        memory("b", "Rate limit is 100 per minute; clients get 429 and a Retry-After header.", 0.5, tags=["limits"]),
        memory("c", "rate limit is 100 per minute.", 0.4),
    ]
    insight = insight_from(sources, memory_id="i", now=NOW, author="hivemem-sleep")
    assert insight.memory_type is MemoryType.INSIGHT and insight.title == sources[0].title
    lines = insight.content.splitlines()
    assert lines[0] == "Consolidated from 3 memories:"
    assert lines[1:] == [
        "- Rate limit is 100 per minute.",
        "- Clients get 429.",
        "- clients get 429 and a Retry-After header.",
    ]
    assert insight.tags == ["api", "limits"] and insight.source is Source.USER_CONFIRMED
    assert insight.content_hash == content_hash(insight.content)


def test_requested_links_travel_through_the_broker_codec_and_are_not_stored_fields() -> None:
    asked = memory("m", "With edges.", requested_links=(Link("g", RelationType.ACHIEVES, 0.7),))
    assert memory_from_json(memory_to_json(asked)).requested_links == (Link("g", RelationType.ACHIEVES, 0.7),)
    assert memory_from_json(memory_to_json(memory("n", "Without."))).requested_links == ()
