"""A real ``hivemem serve`` process: REST over the network, restarts, and MCP over streamable HTTP."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

from tests.e2e.helpers import HivememServer


def test_rest_memorize_remember_forget(server: HivememServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        created = http.post(
            "/v1/memories",
            json={
                "title": "Staging database host",
                "content": "Staging Postgres runs on db-staging.internal port 5433, not 5432.",
                "scope": "github.com/acme/api",
                "memory_type": "fact",
            },
        )
        assert created.status_code == 201, created.text
        assert created.json()["outcome"] == "stored"
        memory_id = created.json()["id"]

        results = http.post(
            "/v1/remember", json={"query": "staging postgres port", "scope": "github.com/acme/api"}
        ).json()["results"]
        assert results[0]["id"] == memory_id
        assert results[0]["scope"] == "github.com/acme/api"

        in_scope = {"scope": "github.com/acme/api"}
        assert http.delete(f"/v1/memories/{memory_id}", params=in_scope).status_code == 400
        assert http.get(f"/v1/memories/{memory_id}", params=in_scope).status_code == 200
        assert http.get(f"/v1/memories/{memory_id}").status_code == 404  # not in the global scope
        assert http.delete(f"/v1/memories/{memory_id}", params={"confirm": "true"} | in_scope).status_code == 200
        assert http.get(f"/v1/memories/{memory_id}", params=in_scope).status_code == 404
        after = http.post("/v1/remember", json={"query": "staging postgres port", "scope": "github.com/acme/api"})
        assert all(r["id"] != memory_id for r in after.json()["results"])


def test_health_and_errors_over_the_network(server: HivememServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.get("/healthz").json()["status"] == "ok"
        assert http.get("/readyz").json()["checks"] == {"store": True, "embedder": True}
        bad = http.post("/v1/memories", content=b"{oops", headers={"content-type": "application/json"})
        assert bad.status_code == 400
        assert bad.json()["error"] == "malformed_json"
        short = http.post("/v1/memories", json={"title": "ab", "content": "Long enough content."})
        assert short.status_code == 422
        assert "title" in short.json()["message"]


def test_memories_survive_a_restart(server: HivememServer) -> None:
    memories = {
        f"marker{i:02d}q": {
            "title": f"Service owner {i}",
            "content": f"Team {i} owns the marker{i:02d}q service and its alerts.",
            "scope": "github.com/acme/ops" if i % 2 else "",
            "tags": [f"team{i}"],
        }
        for i in range(20)
    }
    ids: dict[str, str] = {}
    with httpx.Client(base_url=server.url, timeout=10) as http:
        for marker, body in memories.items():
            response = http.post("/v1/memories", json=body)
            assert response.status_code == 201, response.text
            ids[marker] = response.json()["id"]
    assert len(set(ids.values())) == 20

    # SIGTERM: uvicorn shuts down gracefully and the store is closed, so the process exits 0.
    assert server.stop() == 0, server.log_text()
    assert "Application shutdown complete" in server.log_text()
    server.start()

    with httpx.Client(base_url=server.url, timeout=10) as http:
        for marker, memory_id in ids.items():
            got = http.get(f"/v1/memories/{memory_id}", params={"scope": memories[marker]["scope"]})
            assert got.status_code == 200, f"{marker} lost in restart"
            assert got.json()["content"] == memories[marker]["content"]
            assert got.json()["scope"] == memories[marker]["scope"]
            assert got.json()["tags"] == memories[marker]["tags"]

        for marker, memory_id in ids.items():
            results = http.post(
                "/v1/remember", json={"query": marker, "scope": "github.com/acme/ops", "limit": 5}
            ).json()["results"]
            assert results and results[0]["id"] == memory_id, f"remember {marker} after restart"

        everything = http.post(
            "/v1/remember", json={"query": "service owner team", "scope": "github.com/acme/ops", "limit": 100}
        ).json()["results"]
        assert {r["id"] for r in everything} == set(ids.values())

        # The duplicate index survived too: the same content reinforces the stored memory.
        again = http.post("/v1/memories", json=memories["marker03q"])
        assert (again.json()["id"], again.json()["outcome"]) == (ids["marker03q"], "reinforced")


def test_mcp_over_streamable_http(server: HivememServer) -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(f"{server.url}/mcp") as client:
            tools = await client.list_tools()
            seen["tools"] = {t.name for t in tools.tools}

            created = await client.call_tool(
                "memorize",
                {
                    "title": "Feature flag service",
                    "content": "Feature flags live in LaunchDarkly; the flagd sidecar is deprecated.",
                    "scope": "github.com/acme/api",
                },
            )
            assert not created.is_error, created.content
            memory_id = created.structured_content["id"]
            seen["id"] = memory_id

            found = await client.call_tool(
                "remember", {"query": "feature flags launchdarkly", "scope": "github.com/acme/api"}
            )
            assert not found.is_error, found.content
            seen["found"] = [r["id"] for r in found.structured_content["results"]]
            seen["label"] = found.structured_content["results"][0]["label"]

            forgot = await client.call_tool(
                "forget", {"id": memory_id, "confirm": True, "scope": "github.com/acme/api"}
            )
            assert not forgot.is_error, forgot.content
            seen["forgotten"] = forgot.structured_content["forgotten"]

            gone = await client.call_tool(
                "remember", {"query": "feature flags launchdarkly", "scope": "github.com/acme/api"}
            )
            seen["after"] = [r["id"] for r in gone.structured_content["results"]]

    anyio.run(main)
    assert seen["tools"] == {"memorize", "remember", "job", "forget", "memory", "knowledge", "handoff", "memory_status"}
    assert seen["found"][0] == seen["id"]
    assert seen["label"] == "[INFERRED]"
    assert seen["forgotten"] == seen["id"]
    assert seen["id"] not in seen["after"]
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.get(f"/v1/memories/{seen['id']}").status_code == 404


def test_mcp_and_rest_share_one_store(server: HivememServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        memory_id = http.post(
            "/v1/memories",
            json={"title": "Release train", "content": "The release train leaves every other Wednesday."},
        ).json()["id"]
    found: list[str] = []

    async def main() -> None:
        async with Client(f"{server.url}/mcp") as client:
            result = await client.call_tool("remember", {"query": "release train wednesday"})
            found.extend(r["id"] for r in result.structured_content["results"])

    anyio.run(main)
    assert found[0] == memory_id


def test_a_server_fills_the_second_models_vectors(tmp_path: Path, data_dir: Path) -> None:
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    running = HivememServer(data_dir, log_dir, HIVEMEM_SECOND_EMBED_MODEL="hash:32")
    running.start()
    try:
        with httpx.Client(base_url=running.url, timeout=10) as http:
            scope = {"scope": "github.com/acme/api"}
            created = http.post(
                "/v1/memories",
                json={"title": "Retry policy", "content": "Clients retry with exponential backoff."} | scope,
            )
            assert created.status_code == 201, created.text
            ask = {"query": "exponential backoff", "explain": True} | scope
            deadline = time.monotonic() + 300
            while True:  # the filler runs beside the request: wait for its vector, not for a time
                best = http.post("/v1/remember", json=ask).json()["results"][0]
                if best["explain"]["knn2_rank"] is not None or time.monotonic() > deadline:
                    break
            assert best["id"] == created.json()["id"]
            assert best["explain"]["knn2_rank"] == 1
    finally:
        assert running.stop() == 0
