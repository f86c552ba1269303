"""A memory read by id shows its edges, but only those to memories the caller can read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.service import Caller, MemoryService
from hivemem.config import Settings
from hivemem.model import Relation, RelationType
from hivemem.schemas import MemorizeResult, MemoryCreate


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
    assert [(r.source_id, r.target_id, r.type) for r in shown.relations] == [(newer, note, RelationType.SUPERSEDES)]
