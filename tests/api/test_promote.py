"""Promote to team: a personal memory copied to a team scope, its author kept, linked to the original."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.token_schemas import TokenCreate
from tests.api.conftest import LOCAL_URL

TEAM = "github.com/acme/api"
TEXT = "Run the integration tests with a fresh database each time."


@pytest.fixture
def team(tmp_path: Path) -> Iterator[tuple[MemoryService, TestClient, dict[str, dict[str, str]]]]:
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    admin = Caller(principal="admin")
    grants = {"alice": [f"{TEAM}:write", "github.com/beta/*:read"], "bob": [f"{TEAM}:read"]}
    headers = {
        name: {"Authorization": f"Bearer {service.tokens.create(TokenCreate(name=name, grants=g), admin).token}"}
        for name, g in grants.items()
    }
    with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
        yield service, client, headers
    service.close()


def test_a_personal_memory_is_promoted_to_a_team_scope_with_its_author_and_origin(
    team: tuple[MemoryService, TestClient, dict[str, dict[str, str]]],
) -> None:
    service, client, headers = team
    alice, bob = headers["alice"], headers["bob"]
    # Written in alice's personal scope (a call that names no scope works there).
    mine = client.post("/v1/memories", json={"title": "Fresh test databases", "content": TEXT}, headers=alice)
    assert mine.status_code == 201 and mine.json()["scope"] == "user/alice"
    original = mine.json()["id"]

    promoted = client.post(f"/v1/memories/{original}/promote", json={"to": TEAM}, headers=alice)
    assert promoted.status_code == 201, promoted.text
    copy = promoted.json()["id"]
    assert copy != original and promoted.json()["scope"] == TEAM

    # Bob reads the team copy, written by alice; the edge to her personal memory is not shown to him.
    shown = client.get(f"/v1/memories/{copy}", params={"scope": TEAM}, headers=bob).json()
    assert (shown["content"], shown["author"], shown["relations"]) == (TEXT, "alice", [])
    found = client.post("/v1/remember", json={"query": "integration tests database", "scope": TEAM}, headers=bob)
    assert [(r["id"], r["author"]) for r in found.json()["results"]] == [(copy, "alice")]
    assert client.get(f"/v1/memories/{original}", headers=bob).status_code == 404
    # The copy links to where it came from.
    edges = service.store.relations(copy)
    assert [(e.source_id, e.target_id, e.type.value) for e in edges] == [(copy, original, "derived_from")]
    record = next(e for e in service.store.audit_log(copy) if e.action == "promote")
    assert (record.author, record.scope, record.detail["from"]) == ("alice", TEAM, original)


def test_promotion_needs_read_on_the_memory_and_write_on_the_target(
    team: tuple[MemoryService, TestClient, dict[str, dict[str, str]]],
) -> None:
    service, client, headers = team
    alice, bob = headers["alice"], headers["bob"]
    original = client.post("/v1/memories", json={"title": "A note", "content": TEXT}, headers=alice).json()["id"]
    before = service.store.count()
    # Bob cannot read alice's personal memory: the same 404 as an unknown id.
    assert client.post(f"/v1/memories/{original}/promote", json={"to": TEAM}, headers=bob).status_code == 404
    # Alice may only read github.com/beta/*.
    refused = client.post(f"/v1/memories/{original}/promote", json={"to": "github.com/beta/web"}, headers=alice)
    assert refused.status_code == 403
    same = client.post(f"/v1/memories/{original}/promote", json={"to": "user/alice"}, headers=alice)
    assert same.status_code == 409
    bad = client.post(f"/v1/memories/{original}/promote", json={"to": 5}, headers=alice)
    assert bad.status_code == 422
    assert service.store.count() == before
