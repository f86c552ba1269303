"""Forgetting in bulk, after a preview: the preview and the delete agree, a delete without the
preview's token or after the matching set changed is refused and deletes nothing, every deletion is
audited, team grants are enforced; over REST, MCP and the CLI."""

from __future__ import annotations

import json
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
from hivemem.schemas import MemoryCreate
from hivemem.token_schemas import TokenCreate
from tests.api.conftest import LOCAL_URL
from tests.api.helpers import memorize

SCOPE = "github.com/acme/payments"
NOTES = {
    "Scratch: retry timings": ["scratch"],
    "Scratch: flaky test names": ["scratch"],
    "Scratch: local ports": ["scratch"],
    "Deploys go through staging": [],
    "Payments owns the ledger": [],
}


def stock(client: TestClient) -> dict[str, str]:
    return {
        title: memorize(client, title=title, content=f"{title}, as noted in the session.", tags=tags, scope=SCOPE)["id"]
        for title, tags in NOTES.items()
    }


def test_the_preview_and_the_delete_agree_and_a_changed_set_is_refused(client: TestClient) -> None:
    ids = stock(client)
    ask = {"tags": ["scratch"], "scope": SCOPE}
    preview = client.post("/v1/memories/forget", json=ask)
    assert preview.status_code == 200, preview.text
    seen = preview.json()
    assert (seen["count"], seen["forgotten"]) == (3, None)
    assert seen["said"] == "3 memories match; forget them with confirm: true and this preview_token"
    assert {m["title"] for m in seen["first"]} == {t for t, tags in NOTES.items() if tags}

    without = client.post("/v1/memories/forget", json={**ask, "confirm": True})
    assert without.status_code == 400 and without.json()["error"] == "confirmation_required"
    # Another match written since the preview: the old token no longer names the set.
    memorize(
        client, title="Scratch: one more", content="Scratch: one more, noted later.", tags=["scratch"], scope=SCOPE
    )
    stale = client.post("/v1/memories/forget", json={**ask, "confirm": True, "preview_token": seen["preview_token"]})
    assert stale.status_code == 409 and stale.json()["error"] == "preview_changed"
    assert len(client.get("/v1/memories", params={"scope": SCOPE}).json()["memories"]) == 6  # nothing deleted

    again = client.post("/v1/memories/forget", json=ask).json()
    assert again["count"] == 4
    done = client.post("/v1/memories/forget", json={**ask, "confirm": True, "preview_token": again["preview_token"]})
    assert done.status_code == 200 and len(done.json()["forgotten"]) == 4
    left = client.get("/v1/memories", params={"scope": SCOPE}).json()["memories"]
    assert sorted(m["title"] for m in left) == ["Deploys go through staging", "Payments owns the ledger"]
    records = client.get("/v1/audit", params={"action": "forget"}).json()
    assert len(records) == 4 and {r["detail"]["bulk"] for r in records} == {again["preview_token"]}
    assert ids["Deploys go through staging"] in {m["id"] for m in left}


def test_a_query_forgets_its_best_matches_and_nothing_is_taken_by_default(client: TestClient) -> None:
    stock(client)
    everything = client.post("/v1/memories/forget", json={"scope": SCOPE})
    assert everything.status_code == 422 and "never takes a whole scope" in everything.text
    ask = {"query": "which ports do local services use", "limit": 1, "scope": SCOPE}
    preview = client.post("/v1/memories/forget", json=ask).json()
    assert preview["count"] == 1 and preview["first"][0]["title"] == "Scratch: local ports"
    assert preview["said"].startswith("1 memory matches; forget it with confirm: true")
    done = client.post("/v1/memories/forget", json={**ask, "confirm": True, "preview_token": preview["preview_token"]})
    assert done.json()["forgotten"] == [preview["first"][0]["id"]]
    assert done.json()["said"] == f"forgot 1 memory of {SCOPE}"


def test_team_mode_takes_admin_on_the_scope(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "team", embed_model="hash:64", team=True, rate_limit_per_min=0)
    service = MemoryService.from_settings(settings)
    try:
        admin = service.tokens.first_admin()
        assert admin is not None
        local = Caller()
        writer = service.tokens.create(TokenCreate(name="wes", grants=[f"{SCOPE}:write"]), local).token
        service.memorize(
            MemoryCreate(
                title="Scratch: ports", content="Scratch: local ports 8080-8090.", tags=["scratch"], scope=SCOPE
            ),
            local,
        )
        with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
            ask = {"tags": ["scratch"], "scope": SCOPE}
            refused = client.post("/v1/memories/forget", json=ask, headers={"Authorization": f"Bearer {writer}"})
            assert refused.status_code == 403
            allowed = client.post("/v1/memories/forget", json=ask, headers={"Authorization": f"Bearer {admin.token}"})
            assert allowed.status_code == 200 and allowed.json()["count"] == 1
    finally:
        service.close()


def test_mcp_and_the_cli_preview_then_delete(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService.from_settings(settings)
    said: dict[str, Any] = {}
    try:
        caller = Caller(default_scope=SCOPE)
        for title, tags in NOTES.items():
            service.memorize(MemoryCreate(title=title, content=f"{title}, as noted.", tags=tags), caller)

        async def main() -> None:
            async with Client(build_mcp(lambda: service, session=SessionScope(SCOPE))) as client:
                preview = await client.call_tool("forget", {"tags": ["scratch"]})
                said["preview"] = preview.structured_content
                token = preview.structured_content["preview_token"]
                done = await client.call_tool("forget", {"tags": ["scratch"], "confirm": True, "preview_token": token})
                said["done"] = done.structured_content

        anyio.run(main)
    finally:
        service.close()
    assert said["preview"]["count"] == 3 and said["preview"]["forgotten"] is None
    assert len(said["done"]["forgotten"]) == 3

    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    assert cli_main(["forget", "--author", "local", "--scope", SCOPE]) == 0
    preview = json.loads(capsys.readouterr().out)
    assert preview["count"] == 2
    assert (
        cli_main(["forget", "--author", "local", "--scope", SCOPE, "--confirm", "--token", preview["preview_token"]])
        == 0
    )
    assert len(json.loads(capsys.readouterr().out)["forgotten"]) == 2
