"""The audit log on a team server: every audited action is recorded, read back by an admin over
REST and the CLI, refused to anyone else, and never holds memory text or a token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli_main
from api.main import create_app
from api.services.memories import MemoryService
from hivemem.audit import public_detail
from hivemem.config import Settings
from hivemem.hashing import content_hash
from hivemem.model import Memory, WriteOutcome, new_memory_id, utcnow
from hivemem.resolution import Neighbour, ResolutionPolicy, resolve
from search.capabilities import ResolvesByMeaning
from tests.api.conftest import LOCAL_URL

SCOPE = "github.com/acme/api"
TEXTS = {
    "first": "Deploys go out on Tuesdays after the standup.",
    "second": "Deploys go out on Thursdays since the release freeze.",
    "merged": "The deploy window closes at 4 pm on release days.",
    "folded": "The deploy window closes at 4 pm, and hotfixes are exempt.",
    "goal": "Goal: a deploy takes under ten minutes end to end.",
    "finding": "Caching the container layers cut the deploy to six minutes.",
    "lesson": "Lesson: cache build layers in every pipeline that deploys.",
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Hivemem-Scope": SCOPE}


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[MemoryService, TestClient]]:
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
        yield service, client
    service.close()


def _memorize(client: TestClient, token: str, text: str, **fields: Any) -> str:
    body = {"title": text[:40], "content": text, "scope": SCOPE} | fields
    answer = client.post("/v1/memories", json=body, headers=bearer(token))
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _merge_into(service: MemoryService, old_id: str, text: str, author: str) -> None:
    """A write the resolver merges into ``old_id`` (the cosine set by hand: the hash embedder of
    these tests is no judge of meaning); the store writes its audit record with it."""
    store = service.store
    assert isinstance(store, ResolvesByMeaning)
    memory = Memory(
        id=new_memory_id(), scope=SCOPE, title=text[:40], content=text, content_hash=content_hash(text), author=author
    )
    memory.embedding = service.embedder.embed_passages([memory.embedding_text()])[0]
    plan = resolve(
        memory,
        None,
        utcnow(),
        [Neighbour(store.get(old_id), 0.7)],
        ResolutionPolicy(neighbours=5, reinforce_at=0.85, contradiction_at=0.6),
    )
    assert plan.outcome is WriteOutcome.MERGED
    store.write_planned([memory], lambda *_: plan, neighbours=0)


def test_every_audited_action_is_recorded_and_read_back_by_an_admin_only(
    team: tuple[MemoryService, TestClient], capsys: pytest.CaptureFixture[str]
) -> None:
    service, client = team
    admin = service.tokens.first_admin()
    assert admin is not None
    made = client.post(
        "/v1/tokens", json={"name": "alice", "grants": ["github.com/acme/*:write"]}, headers=bearer(admin.token)
    )
    assert made.status_code == 201, made.text
    alice, alice_id = made.json()["token"], made.json()["id"]

    first = _memorize(client, alice, TEXTS["first"])
    second = _memorize(
        client, alice, TEXTS["second"], related_to=[{"target_id": first, "relationship_type": "supersedes"}]
    )
    kept = _memorize(client, alice, TEXTS["merged"])
    _merge_into(service, kept, TEXTS["folded"], "alice")
    goal = _memorize(client, alice, TEXTS["goal"], memory_type="goal")
    _memorize(client, alice, TEXTS["finding"], related_to=[{"target_id": goal, "relationship_type": "achieves"}])
    _memorize(
        client,
        alice,
        TEXTS["lesson"],
        memory_type="insight",
        related_to=[{"target_id": goal, "relationship_type": "closes"}],
    )
    (supersede,) = client.get("/v1/audit", params={"memory_id": second}, headers=bearer(alice)).json()
    undone = client.post(f"/v1/audit/{supersede['id']}/undo", headers=bearer(admin.token))
    assert undone.status_code == 200, undone.text
    forgot = client.delete(f"/v1/memories/{second}", params={"confirm": "true"}, headers=bearer(alice))
    assert forgot.status_code == 200, forgot.text
    # Refused: a write outside alice's grants, the whole log, and a made-up token.
    outside = {"title": "Elsewhere", "content": "A note for another team.", "scope": "github.com/other/api"}
    assert client.post("/v1/memories", json=outside, headers=bearer(alice)).status_code == 403
    assert client.get("/v1/audit", headers=bearer(alice)).status_code == 403
    forged = f"hm_{alice_id}_{'x' * 43}"
    assert client.get("/v1/whoami", headers={"Authorization": f"Bearer {forged}"}).status_code == 401
    assert client.delete(f"/v1/tokens/{alice_id}", headers=bearer(admin.token)).status_code == 200

    answer = client.get("/v1/audit", params={"limit": 1000}, headers=bearer(admin.token))
    assert answer.status_code == 200, answer.text
    log = answer.json()
    assert {r["action"] for r in log} >= {
        "token_create",
        "supersede",
        "merge",
        "consolidate",
        "undo",
        "forget",
        "denied",
        "token_revoke",
    }
    assert [r["at"] for r in log] == sorted((r["at"] for r in log), reverse=True)  # newest first
    # Each record names its principal, action, target, time and outcome, and nothing of the memories' text.
    assert all(r["author"] and r["action"] and r["at"] for r in log)
    shown = answer.text
    assert not any(text in shown for text in TEXTS.values()) and admin.token not in shown and alice not in shown
    by_action = {r["action"]: r for r in reversed(log)}
    assert (by_action["forget"]["memory_id"], by_action["forget"]["author"]) == (second, "alice")
    assert by_action["undo"]["author"] == "admin" and by_action["undo"]["detail"]["undid"] == supersede["id"]
    assert by_action["merge"]["detail"]["before"] == {"id": kept}
    assert (by_action["token_revoke"]["memory_id"], by_action["token_revoke"]["author"]) == (alice_id, "admin")

    denied = client.get("/v1/audit", params={"action": "denied"}, headers=bearer(admin.token)).json()
    refusals = {(r["author"], r["scope"], r["detail"]["status"], r["detail"]["request"]) for r in denied}
    assert refusals == {
        ("alice", "github.com/other/api", 403, "POST /v1/memories"),
        ("alice", "*", 403, "GET /v1/audit"),
        ("(unknown)", "", 401, "authenticate"),
    }
    assert next(r for r in denied if r["detail"]["status"] == 401)["memory_id"] == alice_id
    only_alice = client.get(
        "/v1/audit", params={"principal": "alice", "action": "forget,supersede"}, headers=bearer(admin.token)
    ).json()
    assert [r["action"] for r in only_alice] == ["forget", "supersede"]

    # The CLI on the server's machine reads the same log, one JSON record a line.
    assert cli_main(["audit", "--action", "token_create", "--action", "token_revoke"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["action"] for r in lines] == ["token_revoke", "token_create", "token_create"]
    assert cli_main(["audit", "--since", "not a time"]) == 2
    capsys.readouterr()
    assert cli_main(["audit", "--action", "token_create", "--since", "2000-01-01", "--until", "2999-01-01"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2  # a plain date: the start of that day, UTC
    assert cli_main(["audit", "--action", "token_create", "--until", "2000-01-01"]) == 0
    assert capsys.readouterr().out == ""


def test_the_readable_log_shows_ids_for_snapshots_and_drops_memory_text() -> None:
    snapshot = {"id": "m1", "title": "T", "content": "secret text", "tags": ["x"]}
    assert public_detail({"before": snapshot, "sources": [snapshot], "reason": "r", "title": "T"}) == {
        "before": {"id": "m1"},
        "sources": [{"id": "m1"}],
        "reason": "r",
    }


def test_audit_queries_that_make_no_sense_are_422(team: tuple[MemoryService, TestClient]) -> None:
    service, client = team
    admin = service.tokens.first_admin()
    assert admin is not None
    for params in (
        {"limit": 0},
        {"limit": 1001},
        {"action": "explode"},
        {"since": "yesterday"},
        {"scope": "Not A Scope!"},
    ):
        answer = client.get("/v1/audit", params=params, headers=bearer(admin.token))
        assert answer.status_code == 422, (params, answer.text)
