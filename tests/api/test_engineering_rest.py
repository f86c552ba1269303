"""Failure and progress memories over REST: a malformed one is refused and nothing is written."""

from __future__ import annotations

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
