"""Helpers shared by the in-process API tests."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


def memorize(client: TestClient, **fields: Any) -> dict[str, Any]:
    """POST /v1/memories with sensible defaults; asserts 201 and returns the body."""
    body = {"title": "A memory title", "content": "Some memory content that is long enough."} | fields
    response = client.post("/v1/memories", json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


def recall(client: TestClient, **body: Any) -> list[dict[str, Any]]:
    """POST /v1/remember; asserts 200 and returns the results."""
    response = client.post("/v1/remember", json=body)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def stored_count(client: TestClient) -> int:
    """How many memories the app's store holds, in every scope."""
    app: Any = client.app
    count: int = app.state.service.store.count()
    return count
