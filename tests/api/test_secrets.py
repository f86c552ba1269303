"""No secrets in memory: every write path refuses a credential (422 naming the kind and the field,
nothing written), or under the `redact` policy stores it as `[REDACTED:kind]` and says so; indexed
documents are redacted with a count; and no refused value shows in an answer, a log line, the audit
log or the metrics."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from api.cli import main as cli_main
from api.main import create_app
from api.mcp.server import SessionScope, build_mcp
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.hashing import content_hash
from hivemem.schemas import MemoryCreate
from search import SearchFilter
from tests.api.conftest import LOCAL_URL

SCOPE = "github.com/acme/payments"
# Real-shaped, made here: a GitHub token's prefix and length, and a Stripe live key's.
GITHUB = "ghp_" + "Zq4w" * 9
STRIPE = "sk_live_" + "x7Kp2mQ9" * 3
DEPLOY_NOTE = f"Deploys pull the mirror with {GITHUB} from the runner's environment."


@pytest.fixture
def refusing(settings: Settings, caplog: pytest.LogCaptureFixture) -> Iterator[TestClient]:
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(settings), base_url=LOCAL_URL) as client:
        yield client


@pytest.fixture
def redacting(settings: Settings, caplog: pytest.LogCaptureFixture) -> Iterator[TestClient]:
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(settings.model_copy(update={"secret_policy": "redact"})), base_url=LOCAL_URL) as client:
        yield client


def refused(answer: Any, field: str, kind: str) -> None:
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert (body["error"], body["field"]) == ("secret_refused", field), body
    assert f"({kind}," in body["message"] and GITHUB not in answer.text and STRIPE not in answer.text


def nothing_leaked(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    """No refused value in the logs, the audit log, the metrics, or anything stored."""
    seen = caplog.text + client.get("/v1/audit").text + client.get("/metrics").text
    seen += client.get("/v1/export").text
    assert GITHUB not in seen and STRIPE not in seen


def test_every_rest_write_refuses_a_credential_and_writes_nothing(
    refusing: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    client = refusing
    note = {"title": "Mirror access", "content": DEPLOY_NOTE, "scope": SCOPE}
    refused(client.post("/v1/memories", json=note), "content", "github_token")
    details = {**note, "content": "Billing runs on the live account.", "details": {"how": f"key {STRIPE}"}}
    refused(client.post("/v1/memories", json=details), "details.how", "stripe_access_key")
    bulk = {"memories": [{**note, "content": "The mirror is read-only."}, note]}
    refused(client.post("/v1/memories/bulk", json=bulk), "memories[1].content", "github_token")
    handoff = {"summary": "Mirror set up", "next_steps": [f"rotate {GITHUB}"], "scope": SCOPE}
    refused(client.post("/v1/handoff", json=handoff), "next_steps[0]", "github_token")
    stored = client.post("/v1/memories", json={**note, "content": "The mirror is read-only for CI."}).json()
    patch = client.patch(f"/v1/memories/{stored['id']}", json={"content": DEPLOY_NOTE}, params={"scope": SCOPE})
    refused(patch, "content", "github_token")
    text = {"key": "runbook", "text": f"Runbook: export STRIPE_KEY={STRIPE} before the job.", "scope": SCOPE}
    refused(client.post("/v1/knowledge/store", json=text), "text", "stripe_access_key")
    memories = client.get("/v1/memories", params={"scope": SCOPE}).json()["memories"]
    assert [m["content"] for m in memories] == ["The mirror is read-only for CI."]  # the edit changed nothing
    assert client.get("/v1/knowledge/sources", params={"scope": SCOPE}).json()["total"] == 0
    nothing_leaked(client, caplog)


def test_the_redact_policy_stores_the_rest_and_says_what_it_replaced(
    redacting: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    client = redacting
    note = {"title": "Mirror access", "content": DEPLOY_NOTE, "scope": SCOPE}
    stored = client.post("/v1/memories", json=note)
    assert stored.status_code == 201 and stored.json()["redacted"] == [{"field": "content", "kind": "github_token"}]
    memory = client.get(f"/v1/memories/{stored.json()['id']}", params={"scope": SCOPE}).json()
    assert memory["content"] == "Deploys pull the mirror with [REDACTED:github_token] from the runner's environment."
    edited = client.patch(f"/v1/memories/{memory['id']}", json={"title": f"Billing {STRIPE}"}, params={"scope": SCOPE})
    assert edited.status_code == 200 and edited.headers["X-Hivemem-Redacted"] == "title:stripe_access_key"
    assert edited.json()["title"] == "Billing [REDACTED:stripe_access_key]"
    handoff = client.post("/v1/handoff", json={"summary": f"Use {GITHUB} for the mirror", "scope": SCOPE})
    assert handoff.json()["redacted"] == [{"field": "summary", "kind": "github_token"}]
    text = {"key": "runbook", "text": f"Runbook: export STRIPE_KEY={STRIPE} before the job.", "scope": SCOPE}
    indexed = client.post("/v1/knowledge/store", json=text)
    assert indexed.status_code == 201 and indexed.json()["redacted"] == 1
    nothing_leaked(client, caplog)


def test_an_uploaded_document_is_redacted_never_refused_with_a_count(
    refusing: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    client = refusing
    page = (
        "<html><body><h1>Runbook</h1><p>The CI mirror uses " + GITHUB + ".</p>"
        "<p>Billing: STRIPE_SECRET_KEY=" + STRIPE + "</p><p>Ask the payments team for access.</p></body></html>"
    )
    answer = client.put("/v1/knowledge/documents", params={"name": "runbook.html", "scope": SCOPE}, content=page)
    assert answer.status_code == 201, answer.text
    assert (answer.json()["status"], answer.json()["redacted"]) == ("indexed", 2)
    found = client.post("/v1/knowledge/search", json={"query": "who gives billing access", "scope": SCOPE}).json()
    passages = " ".join(r["text"] for r in found["results"])
    assert "[REDACTED:github_token]" in passages and "Ask the payments team" in passages
    nothing_leaked(client, caplog)


def test_an_import_is_refused_whole_or_redacted(settings: Settings, tmp_path: Path) -> None:
    # An export of another store whose memory quotes the token (its content hash made anew to match).
    other = MemoryService.from_settings(settings.model_copy(update={"data_dir": tmp_path / "other"}))
    try:
        other.memorize(
            MemoryCreate(title="Mirror access", content="Deploys pull the mirror with TOKEN here.", scope=SCOPE)
        )
        lines = [json.loads(line) for line in other.transfer.export(Caller())]
    finally:
        other.close()
    for line in lines:
        if line.get("kind") == "memory":
            line["content"] = DEPLOY_NOTE
            line["content_hash"] = content_hash(DEPLOY_NOTE)
            memory_id = line["id"]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    ndjson = {"Content-Type": "application/x-ndjson"}
    with TestClient(create_app(settings), base_url=LOCAL_URL) as client:
        refused(client.post("/v1/import", content=body, headers=ndjson), f"memory {memory_id}.content", "github_token")
        assert client.get("/v1/memories", params={"scope": SCOPE}).json()["memories"] == []
    redact = settings.model_copy(update={"secret_policy": "redact"})
    with TestClient(create_app(redact), base_url=LOCAL_URL) as client:
        done = client.post("/v1/import", content=body, headers=ndjson)
        assert done.status_code == 200 and (done.json()["memories"], done.json()["redacted"]) == (1, 1), done.text
        (memory,) = client.get("/v1/memories", params={"scope": SCOPE}).json()["memories"]
        assert "[REDACTED:github_token]" in memory["content"]


def test_mcp_and_the_cli_refuse_it_too(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService.from_settings(settings)
    said: dict[str, Any] = {}

    async def main() -> None:
        async with Client(build_mcp(lambda: service, session=SessionScope(SCOPE))) as client:
            result = await client.call_tool("memorize", {"title": "Mirror access", "content": DEPLOY_NOTE})
            said["memorize"] = (result.is_error, " ".join(getattr(p, "text", "") for p in result.content))

    try:
        anyio.run(main)
        assert service.store.count() == 0
    finally:
        service.close()
    is_error, text = said["memorize"]
    assert is_error and "content holds what looks like a credential (github_token" in text and GITHUB not in text

    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "cli"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    assert cli_main(["memorize", "--json", "--title", "Mirror access", "--content", DEPLOY_NOTE, "--scope", SCOPE]) == 2
    out = capsys.readouterr()
    assert "credential (github_token" in out.err and GITHUB not in out.err + out.out


def test_mcp_and_the_cli_redact_under_the_redact_policy(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService.from_settings(settings.model_copy(update={"secret_policy": "redact"}))
    said: dict[str, Any] = {}

    async def main() -> None:
        async with Client(build_mcp(lambda: service, session=SessionScope(SCOPE))) as client:
            result = await client.call_tool("memorize", {"title": "Mirror access", "content": DEPLOY_NOTE})
            said["memorize"] = result.structured_content

    try:
        anyio.run(main)
        (stored,) = service.store.list_memories(SearchFilter(scopes=[SCOPE]), 5)
    finally:
        service.close()
    assert said["memorize"]["redacted"] == [{"field": "content", "kind": "github_token"}]
    assert "[REDACTED:github_token]" in stored.content and GITHUB not in stored.content

    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "cli"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    monkeypatch.setenv("HIVEMEM_SECRET_POLICY", "redact")
    assert (
        cli_main(
            [
                "memorize",
                "--json",
                "--title",
                "Billing key",
                "--content",
                f"Billing uses {STRIPE} now.",
                "--scope",
                SCOPE,
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    assert json.loads(out.out)["redacted"] == [{"field": "content", "kind": "stripe_access_key"}]
    assert STRIPE not in out.out + out.err


def test_a_write_whose_scan_runs_out_of_budget_is_not_stored(
    refusing: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the scan could not finish checking may hold a key: a 503 that says so, nothing stored.
    The budget is made to run out here (a starved server is the only way it does on its own)."""
    monkeypatch.setattr("hivemem.secret_scan._BUDGET_BASE_S", -1.0)
    answer = refusing.post("/v1/memories", json={"title": "Deploy note", "content": "Deploys go through staging."})
    assert answer.status_code == 503
    assert answer.json()["error"] == "scan_too_slow"
    assert "nothing was stored" in answer.json()["message"]
    monkeypatch.undo()
    assert refusing.get("/v1/memories").json()["memories"] == []
