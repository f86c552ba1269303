"""Operators' REST on a team server: list memories page by page with filters, edit one (embedded
again when its text changes, audited), and each readable scope's counts."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli_main
from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate
from hivemem.token_schemas import TokenCreate
from tests.api.conftest import LOCAL_URL

SCOPE = "github.com/acme/api"
OTHER = "github.com/beta/web"
Team = tuple[MemoryService, TestClient, dict[str, dict[str, str]]]


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    grants = {"alice": [f"{SCOPE}:write"], "bob": [f"{SCOPE}:write", f"{OTHER}:write"], "root": ["*:admin"]}
    admin = Caller(principal="setup")
    headers = {
        name: {"Authorization": f"Bearer {service.tokens.create(TokenCreate(name=name, grants=g), admin).token}"}
        for name, g in grants.items()
    }
    with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
        yield service, client, headers
    service.close()


def _memorize(client: TestClient, who: dict[str, str], content: str, scope: str = SCOPE, **fields: Any) -> str:
    body = {"title": content[:30], "content": content, "scope": scope} | fields
    answer = client.post("/v1/memories", json=body, headers=who)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _pages(client: TestClient, who: dict[str, str], **params: Any) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        query = params | ({} if cursor is None else {"cursor": cursor})
        answer = client.get("/v1/memories", params=query, headers=who)
        assert answer.status_code == 200, answer.text
        pages.append([m["id"] for m in answer.json()["memories"]])
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            return pages


def test_memories_are_listed_page_by_page_and_filtered(team: Team) -> None:
    _, client, headers = team
    alice, bob = headers["alice"], headers["bob"]
    ids = [
        _memorize(client, alice, f"Decision {i}: the service uses queue {i}.", memory_type="decision", tags=["queues"])
        for i in range(4)
    ]
    ids.append(_memorize(client, bob, "Bob noted the cache misses on cold starts.", memory_type="preference"))
    _memorize(client, bob, "Beta's web app builds with Vite.", scope=OTHER)

    pages = _pages(client, alice, scope=SCOPE, limit=2)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [i for p in pages for i in p] == list(reversed(ids))  # newest first, nothing twice
    assert _pages(client, alice, scope=SCOPE, type="preference") == [[ids[4]]]
    assert _pages(client, alice, scope=SCOPE, author="bob") == [[ids[4]]]
    assert _pages(client, alice, scope=SCOPE, tag="queues", limit=10) == [list(reversed(ids[:4]))]
    assert _pages(client, alice, scope=SCOPE, state="archived") == [[]]
    assert _pages(client, alice, scope=SCOPE, created_after="2999-01-01T00:00:00Z") == [[]]
    for bad in ({"cursor": "not-a-cursor"}, {"limit": 0}, {"limit": 201}, {"created_after": "yesterday"}):
        assert client.get("/v1/memories", params={"scope": SCOPE} | bad, headers=alice).status_code == 422, bad
    assert client.get("/v1/memories", params={"scope": OTHER}, headers=alice).status_code == 403


def test_an_edit_is_embedded_again_audited_and_needs_the_right_grant(team: Team) -> None:
    service, client, headers = team
    # The scope header, as an agent working in the project sends it (ids are looked up there).
    alice, bob, root = ({**headers[n], "X-Hivemem-Scope": SCOPE} for n in ("alice", "bob", "root"))
    mine = _memorize(client, alice, "The nightly job runs at two in the morning.")
    theirs = _memorize(client, bob, "Bob keeps the on-call rota in the wiki.")
    before = service.store.get(mine)

    changed = client.patch(
        f"/v1/memories/{mine}", json={"content": "The nightly job runs at four in the morning."}, headers=alice
    )
    assert changed.status_code == 200, changed.text
    after = service.store.get(mine)
    assert after.content_hash != before.content_hash and after.embedding != before.embedding
    found = client.post("/v1/remember", json={"query": "nightly job four", "scope": SCOPE}, headers=alice).json()
    assert found["results"][0]["content"] == "The nightly job runs at four in the morning."

    # Importance and tags alone keep the vector.
    weighed = client.patch(f"/v1/memories/{mine}", json={"importance": 0.9, "tags": ["ops", "ops"]}, headers=alice)
    assert weighed.status_code == 200 and weighed.json()["tags"] == ["ops"]
    assert service.store.get(mine).embedding == after.embedding

    assert client.patch(f"/v1/memories/{theirs}", json={"importance": 0.1}, headers=alice).status_code == 403
    assert client.patch(f"/v1/memories/{theirs}", json={"importance": 0.1}, headers=root).status_code == 200
    taken = client.patch(
        f"/v1/memories/{mine}", json={"content": "Bob keeps the on-call rota in the wiki."}, headers=alice
    )
    assert taken.status_code == 409
    for bad in ({}, {"title": None}, {"importance": 2}, {"content": ""}, {"colour": "red"}):
        assert client.patch(f"/v1/memories/{mine}", json=bad, headers=alice).status_code == 422, bad
    unknown = client.patch("/v1/memories/00000000-0000-4000-8000-000000000000", json={"importance": 0.2}, headers=root)
    assert unknown.status_code == 404
    records = [e for e in service.store.audit_log(mine) if e.action == "update"]
    assert [(e.author, e.detail["changed"]) for e in records] == [
        ("alice", ["content"]),
        ("alice", ["importance", "tags"]),
    ]


def test_scope_counts_show_only_readable_scopes(team: Team) -> None:
    _, client, headers = team
    _memorize(client, headers["alice"], "A decision about the API.", memory_type="decision")
    _memorize(client, headers["bob"], "The web app is built with Vite.", scope=OTHER)
    _memorize(client, headers["bob"], "The web app talks to the API over GraphQL.", scope=OTHER)
    seen = {s["scope"]: s for s in client.get("/v1/scopes", headers=headers["root"]).json()}
    assert (seen[OTHER]["memories"], seen[OTHER]["by_type"], seen[OTHER]["by_state"]) == (
        2,
        {"fact": 2},
        {"working": 2},
    )
    assert seen[SCOPE]["by_type"] == {"decision": 1}
    assert [s["scope"] for s in client.get("/v1/scopes", headers=headers["alice"]).json()] == [SCOPE]
    # A scope holding documents only is a scope too, with its documents and their chunks counted.
    docs = f"{OTHER}-docs"
    for key in ("runbook", "oncall"):
        body = {"key": key, "text": f"The {key} text.", "scope": docs}
        assert client.post("/v1/knowledge/store", json=body, headers=headers["root"]).status_code == 201
    # A refused upload is on record with its reason and no chunks: counted as failed, as the status counts it.
    bad = client.put(
        "/v1/knowledge/documents",
        params={"name": "fake.pdf", "scope": docs},
        content=b"not a pdf",
        headers=headers["root"],
    )
    assert bad.status_code == 422, bad.text
    seen = {s["scope"]: s for s in client.get("/v1/scopes", headers=headers["root"]).json()}
    counts = ("memories", "documents", "chunks", "documents_failed")
    assert tuple(seen[docs][k] for k in counts) == (0, 2, 2, 1)
    assert tuple(seen[OTHER][k] for k in counts) == (2, 0, 0, 0)
    assert docs not in {s["scope"] for s in client.get("/v1/scopes", headers=headers["bob"]).json()}


def test_the_cli_lists_shows_and_edits_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService.from_settings(Settings(data_dir=tmp_path, embed_model="hash:64"))
    try:
        notes = [MemoryCreate(title=f"Note {i}", content=f"Operator note number {i}.", scope=SCOPE) for i in range(2)]
        first, second = (r.id for r in service.memorize_many(notes, Caller(principal="cli")))
    finally:
        service.close()
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")

    def run(*argv: str) -> Any:
        assert cli_main(list(argv)) == 0
        return json.loads(capsys.readouterr().out)

    page = run("memories", "list", "--scope", SCOPE, "--limit", "1")
    rest = run("memories", "list", "--scope", SCOPE, "--limit", "1", "--cursor", page["next_cursor"])
    assert [m["id"] for m in page["memories"] + rest["memories"]] == [second, first] and rest["next_cursor"] is None
    assert run("memories", "update", first, "--scope", SCOPE, "--importance", "0.8")["importance"] == 0.8
    assert run("memories", "show", first, "--scope", SCOPE)["importance"] == 0.8

    # One group under its name and its older one, the same commands; `get` is show's short form.
    # (Each read by id counts as a use of the memory: its access fields move, nothing else.)
    def shown(*argv: str) -> dict[str, Any]:
        answer: dict[str, Any] = run(*argv)
        return {k: v for k, v in answer.items() if k not in ("access_count", "last_accessed_at")}

    assert shown("memory", "show", first, "--scope", SCOPE) == shown("memories", "show", first, "--scope", SCOPE)
    assert shown("get", first, "--scope", SCOPE) == shown("memory", "show", first, "--scope", SCOPE)
    assert run("memory", "list", "--scope", SCOPE)["memories"][0]["id"] == second
    assert [e["action"] for e in run("memories", "audit", first, "--scope", SCOPE)] == [
        e["action"] for e in run("memory", "audit", first, "--scope", SCOPE)
    ]
    assert cli_main(["memories", "update", first, "--scope", SCOPE]) == 2  # nothing to change
    capsys.readouterr()
    for limit in ("0", "-5", "201"):  # as REST refuses them (a negative one read every memory)
        assert cli_main(["memories", "list", "--scope", SCOPE, "--limit", limit]) == 2
        assert f"limit: a page holds 1 to 200 memories, not {limit}" in capsys.readouterr().err
    # A malformed scope is refused as REST refuses it: the CLI reaches the services with no request
    # model, and listed or exported such a scope as an empty one.
    update = ["memories", "update", first, "--scope", "../x", "--importance", "0.5"]
    for argv in (["memories", "list", "--scope", "a//b"], update, ["export", "--scope", "../../etc"]):
        assert cli_main(argv) == 2, argv
        said = capsys.readouterr()
        assert "scope must be up to 200 characters of path segments" in said.err and said.out == "", argv
    recall = ["remember", "operator note", "--scope", SCOPE, "--json"]
    assert len(run(*recall, "--before", "2999-01-01T00:00:00Z", "--min-relevance", "0.01")["results"]) == 2
    assert run(*recall, "--after", "2999-01-01T00:00:00Z")["results"] == []
    assert run(*recall, "--min-relevance", "1")["results"] == []
    assert cli_main([*recall, "--after", "yesterday"]) == 2
    # A plain date is the start of that day, UTC, on every command that filters by time.
    assert len(run(*recall, "--before", "2999-01-01", "--after", "2000-01-01")["results"]) == 2
    assert run(*recall, "--after", "2999-01-01")["results"] == []
    assert run("memories", "list", "--scope", SCOPE, "--before", "2000-01-01")["memories"] == []
    assert len(run("memories", "list", "--scope", SCOPE, "--after", "2000-01-01")["memories"]) == 2
    # Bytes that are not UTF-8 in an argument (Python holds them as lone surrogates): a clear error.
    not_utf8 = os.fsdecode(b"t/caf\xe9")
    for argv in (["get", os.fsdecode(b"\xff")], ["memories", "list", "--scope", SCOPE, "--tag", not_utf8]):
        assert cli_main(argv) == 2
        assert "error: not valid UTF-8 text" in capsys.readouterr().err
