"""``/metrics`` over real HTTP: Prometheus text that prometheus-client's parser reads, moving as
requests, MCP tool calls, recalls, jobs and embedder batches happen; refused without a token where
one is needed; absent when turned off. And ``/docs``, ``/redoc`` load nothing from a CDN."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from api.services.memories import MemoryService
from hivemem.config import Settings
from tests.api.test_team_acl import ServerThread

SCOPE = "github.com/acme/api"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(http: httpx.Client) -> Samples:
    answer = http.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    service = MemoryService.from_settings(Settings(data_dir=tmp_path / "data", embed_model="hash:64"))
    try:
        with ServerThread(service) as running:
            yield running
    finally:
        service.close()


def test_metrics_parse_and_move_with_requests_tool_calls_recalls_and_jobs(server: ServerThread) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        before = samples(http)
        for text in ("Deploys run from the release branch.", "The staging database is reset nightly."):
            answer = http.post("/v1/memories", json={"title": text[:30], "content": text, "scope": SCOPE})
            assert answer.status_code == 201
        assert http.post("/v1/remember", json={"query": "release branch deploys", "scope": SCOPE}).status_code == 200
        assert http.get("/v1/memories/00000000-0000-4000-8000-000000000000").status_code == 404
        stored = http.post("/v1/knowledge/store", json={"key": "runbook", "text": "Roll back by tag.", "scope": SCOPE})
        assert stored.status_code == 201, stored.text

        async def remember_over_mcp() -> None:
            async with (
                httpx2.AsyncClient(timeout=30) as client_http,
                Client(streamable_http_client(f"{server.url}/mcp", http_client=client_http)) as client,
            ):
                done = await client.call_tool("remember", {"query": "staging database", "scope": SCOPE})
                assert not done.is_error
                refused = await client.call_tool("forget", {"id": "not-an-id", "confirm": True, "scope": SCOPE})
                assert refused.is_error

        anyio.run(remember_over_mcp)
        after = samples(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("hivemem_http_requests_total", route="/v1/memories", method="POST", status="201") == 2
    assert moved("hivemem_http_requests_total", route="/v1/memories/{memory_id:uuid}", method="GET", status="404") == 1
    assert moved("hivemem_http_request_seconds_count", route="/v1/remember", method="POST") == 1
    assert moved("hivemem_mcp_tool_calls_total", tool="remember", outcome="ok") == 1
    assert moved("hivemem_mcp_tool_calls_total", tool="forget", outcome="error") == 1
    for stage in ("legs", "fetch", "rerank", "score"):
        assert moved("hivemem_recall_stage_seconds_count", stage=stage) == 2, stage
    assert moved("hivemem_rerank_total", outcome="off") == 2
    for lane in ("queries", "passages", "documents"):
        assert moved("hivemem_embed_batch_size_count", lane=lane) >= 1, lane
    assert value(after, "hivemem_memories") == 2
    assert ("hivemem_queue_depth", (("queue", "ingest"),)) in after
    assert moved("hivemem_jobs", state="done") >= 2  # the two memorize jobs at least
    assert ("hivemem_jobs", (("state", "failed"),)) in after
    assert value(after, "process_resident_memory_bytes") > 0


def test_metrics_need_a_token_where_tokens_are_needed_and_can_be_turned_off(tmp_path: Path) -> None:
    team = MemoryService.from_settings(Settings(data_dir=tmp_path / "team", embed_model="hash:64", team=True))
    try:
        with ServerThread(team) as running, httpx.Client(base_url=running.url, timeout=30) as http:
            assert http.get("/metrics").status_code == 401
    finally:
        team.close()
    quiet = MemoryService.from_settings(Settings(data_dir=tmp_path / "quiet", embed_model="hash:64", metrics=False))
    try:
        with ServerThread(quiet) as running, httpx.Client(base_url=running.url, timeout=30) as http:
            assert http.get("/metrics").status_code == 404
    finally:
        quiet.close()


def test_the_api_pages_load_their_scripts_from_the_server(server: ServerThread) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for page, script in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
            html = http.get(page)
            assert html.status_code == 200 and f"/docs/static/{script}" in html.text
            assert "cdn" not in html.text.lower() and "googleapis" not in html.text
            served = http.get(f"/docs/static/{script}")
            assert served.status_code == 200 and len(served.content) > 100_000


def test_the_second_legs_filler_is_seen_in_the_metrics(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", second_embed_model="hash:32")
    service = MemoryService.from_settings(settings)
    try:
        with ServerThread(service) as running, httpx.Client(base_url=running.url, timeout=10) as http:
            service.start_background()
            for n in range(3):
                created = http.post(
                    "/v1/memories",
                    json={"title": f"Note {n}", "content": f"the {n}th note of the day", "scope": SCOPE},
                )
                assert created.status_code == 201, created.text
            assert service.second_leg is not None and service.second_leg.wait_caught_up(30)
            found = samples(http)
            assert value(found, "hivemem_second_leg_vectors_total") == 3
            assert value(found, "hivemem_second_leg_caught_up") == 1
    finally:
        service.close()
