"""Undoing a merge or a supersede from its audit record, over REST, on the real app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.hashing import content_hash
from hivemem.model import Memory, RelationType, WriteOutcome, new_memory_id, utcnow
from hivemem.resolution import Neighbour, ResolutionPolicy, resolve
from hivemem.token_schemas import TokenCreate
from search.capabilities import ResolvesByMeaning
from tests.api.conftest import LOCAL_URL

SCOPE = "github.com/acme/api"
HEADERS = {"X-Hivemem-Scope": SCOPE}
POLICY = ResolutionPolicy(neighbours=5, reinforce_at=0.85, contradiction_at=0.6)
LOCAL = Caller(principal="admin")


def _memorize(client: TestClient, content: str) -> str:
    answer = client.post("/v1/memories", json={"title": content[:40], "content": content, "scope": SCOPE})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _resolved_into(client: TestClient, old_id: str, content: str, cosine: float) -> tuple[WriteOutcome, Memory]:
    """Write ``content`` as the resolver decides against ``old_id`` at ``cosine`` (the cosine set by
    hand: the hash embedder of these tests is no judge of meaning)."""
    service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
    store = service.store
    assert isinstance(store, ResolvesByMeaning)
    memory = Memory(
        id=new_memory_id(), scope=SCOPE, title=content[:40], content=content, content_hash=content_hash(content)
    )
    memory.embedding = service.embedder.embed_passages([memory.embedding_text()])[0]
    plan = resolve(memory, None, utcnow(), [Neighbour(store.get(old_id), cosine)], POLICY)
    store.write_planned([memory], lambda *_: plan, neighbours=0)
    return plan.outcome, plan.memory


def _audit(client: TestClient, memory_id: str) -> list[dict[str, Any]]:
    answer = client.get("/v1/audit", params={"memory_id": memory_id}, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    return list(answer.json())


def test_undoing_a_supersede_makes_the_old_memory_valid_again_once(client: TestClient) -> None:
    old_id = _memorize(client, "The user prefers TypeScript for new services.")
    outcome, new = _resolved_into(client, old_id, "We decided to drop TypeScript for Go in new services.", 0.7)
    assert outcome is WriteOutcome.SUPERSEDED
    assert client.get(f"/v1/memories/{old_id}", headers=HEADERS).json()["valid_to"] is not None
    (record,) = [r for r in _audit(client, new.id) if r["action"] == "supersede"]
    answer = client.post(f"/v1/audit/{record['id']}/undo", headers=HEADERS)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"audit_id": record["id"], "action": "supersede", "restored": [old_id]}
    old = client.get(f"/v1/memories/{old_id}", headers=HEADERS).json()
    assert old["valid_to"] is None and old["relations"] == []
    # Both memories stay; the undo is audited, and a second undo is refused, changing nothing.
    assert client.get(f"/v1/memories/{new.id}", headers=HEADERS).status_code == 200
    assert [r["action"] for r in _audit(client, new.id)] == ["undo", "supersede"]  # newest first
    again = client.post(f"/v1/audit/{record['id']}/undo", headers=HEADERS)
    assert again.status_code == 409 and "already undone" in again.text


def test_undoing_a_merge_gives_both_memories_their_own_text_back(client: TestClient) -> None:
    old_id = _memorize(client, "We use Redis for the session cache.")
    before = client.get(f"/v1/memories/{old_id}", headers=HEADERS).json()
    outcome, merged = _resolved_into(client, old_id, "The Redis session cache has a TTL of 24 hours.", 0.7)
    assert outcome is WriteOutcome.MERGED and merged.id == old_id
    assert "TTL of 24 hours" in client.get(f"/v1/memories/{old_id}", headers=HEADERS).json()["content"]
    (record,) = [r for r in _audit(client, old_id) if r["action"] == "merge"]
    folded_in = record["detail"]["merged"]
    assert client.get(f"/v1/memories/{folded_in}", headers=HEADERS).status_code == 404
    done = client.post(f"/v1/audit/{record['id']}/undo", headers=HEADERS).json()
    assert done["restored"] == [old_id, folded_in]
    assert client.get(f"/v1/memories/{old_id}", headers=HEADERS).json()["content"] == before["content"]
    separate = client.get(f"/v1/memories/{folded_in}", headers=HEADERS).json()
    assert separate["content"] == "The Redis session cache has a TTL of 24 hours."
    # Both are found again by their own words.
    found = client.post("/v1/remember", json={"query": "session cache TTL hours", "scope": SCOPE}).json()["results"]
    assert folded_in in [r["id"] for r in found]


def test_a_forget_cannot_be_undone_and_unknown_records_are_404(client: TestClient) -> None:
    memory_id = _memorize(client, "A note that will be forgotten.")
    assert client.delete(f"/v1/memories/{memory_id}", params={"confirm": "true"}, headers=HEADERS).status_code == 200
    (record,) = _audit(client, memory_id)
    refused = client.post(f"/v1/audit/{record['id']}/undo", headers=HEADERS)
    assert (
        refused.status_code == 409
        and "only a merge, a reinforcement by meaning, a supersede, a consolidation or an archiving" in refused.text
    )
    missing = client.post("/v1/audit/999999/undo", headers=HEADERS)
    assert missing.status_code == 404 and missing.json()["error"] == "audit_not_found"
    assert client.post("/v1/audit/not-a-number/undo", headers=HEADERS).status_code == 404


def test_a_supersede_link_is_what_the_undo_removes(client: TestClient) -> None:
    old_id = _memorize(client, "Builds run with Maven.")
    _, new = _resolved_into(client, old_id, "Builds moved from Maven to Gradle.", 0.7)
    links = client.get(f"/v1/memories/{old_id}", headers=HEADERS).json()["relations"]
    assert [(r["source_id"], r["type"]) for r in links] == [(new.id, RelationType.SUPERSEDES.value)]


def test_the_cli_lists_a_memorys_audit_trail_and_undoes_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from api.cli import main

    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    service = MemoryService.from_settings(Settings())
    try:
        old = Memory(id=new_memory_id(), scope=SCOPE, title="Deploy day", content="Deploys run on Tuesdays.",
                     content_hash=content_hash("Deploys run on Tuesdays."))  # fmt: skip
        old.embedding = service.embedder.embed_passages([old.embedding_text()])[0]
        service.store.put(old)
        text = "Deploys run on Wednesdays now."
        new = Memory(id=new_memory_id(), scope=SCOPE, title="Deploy day", content=text, content_hash=content_hash(text))
        new.embedding = old.embedding
        plan = resolve(new, None, utcnow(), [Neighbour(old, 0.7)], POLICY)
        assert plan.outcome is WriteOutcome.SUPERSEDED
        store = service.store
        assert isinstance(store, ResolvesByMeaning)
        store.write_planned([new], lambda *_: plan, neighbours=0)
    finally:
        service.close()
    assert main(["memory", "audit", new.id, "--scope", SCOPE]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert (record["action"], record["detail"]["superseded"]) == ("supersede", old.id)
    assert main(["memory", "undo", record["id"]]) == 0
    assert f"undid supersede {record['id']}: restored {old.id}" in capsys.readouterr().out
    reopened = MemoryService.from_settings(Settings())
    try:
        assert reopened.store.get(old.id).valid_to is None
    finally:
        reopened.close()


def test_an_undo_changes_a_memory_of_another_scope_only_for_its_admin(tmp_path: Path) -> None:
    """A project's note may supersede a global fact (an edge reaches the global scope). The record is
    the project's, but undoing it makes the global fact valid again: that takes admin there too."""
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    try:
        admin = service.tokens.first_admin()
        assert admin is not None
        tokens = {
            name: service.tokens.create(TokenCreate(name=name, grants=grants), LOCAL).token
            for name, grants in {
                "alice": ["github.com/acme/*:admin", "(global):write"],
                "dave": [f"{SCOPE}:admin"],
            }.items()
        }
        with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
            as_alice = {"Authorization": f"Bearer {tokens['alice']}"}
            fact = client.post(
                "/v1/memories",
                json={"title": "Logs in UTC", "content": "Every service writes its logs in UTC.", "global": True},
                headers=as_alice,
            ).json()["id"]
            note = client.post(
                "/v1/memories",
                json={
                    "title": "API logs in local time",
                    "content": "The API service writes its logs in local time now.",
                    "scope": SCOPE,
                    "related_to": [{"target_id": fact, "relationship_type": "supersedes"}],
                },
                headers=as_alice,
            ).json()
            assert note["superseded_by_links"] == [fact]
            (record,) = [e for e in service.store.audit_log() if e.action == "supersede"]
            assert record.scope == SCOPE
            refused = client.post(f"/v1/audit/{record.id}/undo", headers={"Authorization": f"Bearer {tokens['dave']}"})
            assert refused.status_code == 403, refused.text
            assert "would change a memory in a scope it may not read" in refused.json()["message"]
            held = service.store.get(fact)
            assert held is not None and held.valid_to is not None  # still superseded: nothing changed
            assert [e.action for e in service.store.audit_log(fact)].count("undo") == 0
            undone = client.post(f"/v1/audit/{record.id}/undo", headers={"Authorization": f"Bearer {admin.token}"})
            assert undone.status_code == 200 and undone.json()["restored"] == [fact], undone.text
            back = service.store.get(fact)
            assert back is not None and back.valid_to is None
    finally:
        service.close()
