"""Failure and progress memories over REST: a malformed one is refused and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

SCOPE = "github.com/acme/api"


def test_a_failure_without_its_severity_is_refused_and_a_whole_one_is_stored(client: TestClient) -> None:
    body = {
        "title": "Checkout timeouts",
        "content": "Checkout timed out calling billing.",
        "scope": SCOPE,
        "memory_type": "failure",
        "details": {"error": "TimeoutError", "component": "billing"},
    }
    refused = client.post("/v1/memories", json=body)
    assert refused.status_code == 422 and "severity" in refused.text
    found = client.post("/v1/remember", json={"query": "checkout timed out billing", "scope": SCOPE}).json()
    assert found["results"] == []
    body["details"] = {"error": "TimeoutError", "component": "billing", "severity": "high"}
    stored = client.post("/v1/memories", json=body)
    assert stored.status_code == 201, stored.text
    assert client.get(f"/v1/memories/{stored.json()['id']}", params={"scope": SCOPE}).json()["importance"] == 0.8


def test_the_cli_memorizes_a_failure_with_its_details_and_refuses_broken_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from api.cli import main

    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    command = [
        "memorize",
        "--json",
        "--title",
        "Checkout timeouts",
        "--content",
        "Checkout timed out.",
        "--scope",
        SCOPE,
    ]
    details = json.dumps({"error": "TimeoutError", "component": "billing", "severity": "critical"})
    assert main([*command, "--type", "failure", "--details", details]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["outcome"] == "stored"
    with pytest.raises(SystemExit) as usage:
        main([*command, "--type", "failure", "--details", "{broken"])
    assert usage.value.code == 2 and "not JSON" in capsys.readouterr().err
