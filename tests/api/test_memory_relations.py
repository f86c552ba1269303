"""A memory read by id shows its edges, but only those to memories the caller can read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.answers import MemorizeResult
from hivemem.config import Settings
from hivemem.model import Relation, RelationType
from hivemem.schemas import MemoryCreate, RecallRequest


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    settings = Settings(
        store_url=f"sqlite:///{tmp_path / 'hive.db'}", data_dir=str(tmp_path), broker_url="", embed_model="hash:64"
    )
    memory_service = MemoryService.from_settings(settings)
    yield memory_service
    memory_service.close()


def _stored(service: MemoryService, content: str, scope: str) -> str:
    result = service.memorize(
        MemoryCreate(title=content[:40], content=content, scope=scope), Caller(default_scope=scope)
    )
    assert isinstance(result, MemorizeResult)
    return result.id


def test_get_shows_the_edges_to_readable_memories_only(service: MemoryService) -> None:
    note = _stored(service, "The deploy window is Tuesday morning.", "github.com/acme/api")
    newer = _stored(service, "The deploy window moved to Wednesday morning.", "github.com/acme/api")
    hidden = _stored(service, "Team B deploys on Thursdays.", "github.com/acme/secret")
    service.store.add_relation(Relation(newer, note, RelationType.SUPERSEDES))
    service.store.add_relation(Relation(hidden, note, RelationType.RELATED_TO))
    shown = service.get(note, Caller(default_scope="github.com/acme/api"))
    # (`similar` links, from the write-time resolution, aside.)
    edges = [(r.source_id, r.target_id, r.type) for r in shown.relations if r.type is not RelationType.SIMILAR]
    assert edges == [(newer, note, RelationType.SUPERSEDES)]


def test_recall_adds_the_memories_linked_to_its_results_labelled_via_graph(service: MemoryService) -> None:
    scope = "github.com/acme/api"
    caller = Caller(default_scope=scope)
    goal = _stored(service, "Goal: cut the p95 latency of checkout below 300 ms.", scope)
    finding = _stored(service, "Zorblax caching of the tax table removed 120 ms from checkout.", scope)
    second = _stored(service, "The payment provider answers in 80 ms from Frankfurt.", scope)
    hidden = _stored(service, "Team B benchmarks checkout on Fridays.", "github.com/acme/secret")
    service.store.add_relation(Relation(finding, goal, RelationType.ACHIEVES, strength=0.9))
    service.store.add_relation(Relation(goal, second, RelationType.RELATED_TO, strength=0.5))
    service.store.add_relation(Relation(hidden, finding, RelationType.SIMILAR))
    found = service.remember(RecallRequest(query="zorblax caching tax table", limit=1), caller)
    assert [r.id for r in found.results] == [finding]
    assert [(r.id, r.via, r.linked_from, r.relation) for r in found.related] == [
        (goal, "graph", finding, RelationType.ACHIEVES)
    ]  # the other scope's memory is never reached
    two = service.remember(RecallRequest(query="zorblax caching tax table", limit=1, graph_hops=2), caller)
    assert [r.id for r in two.related] == [goal, second]
    assert two.related[0].score > two.related[1].score
    none = service.remember(RecallRequest(query="zorblax caching tax table", limit=1, graph_hops=0), caller)
    assert none.related == []
