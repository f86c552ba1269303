"""Memorize and recall through real gateways, a real Redis and real Celery worker processes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
from mcp import Client

from hivemem.embedding import HashEmbedder
from search import open_store
from tests.distributed.conftest import Cluster


def memory(title: str, content: str, scope: str, **extra: Any) -> dict[str, Any]:
    return {"title": title, "content": content, "scope": scope, **extra}


def test_memorize_over_http_runs_on_the_workers_and_recall_finds_it(cluster: Cluster) -> None:
    scope = "github.com/acme/http"
    with httpx.Client(base_url=cluster.gateways[0].url, timeout=30) as http:
        created = http.post(
            "/v1/memories",
            json=memory("Queue broker", "The job queue runs on Redis 7 with a short visibility timeout.", scope),
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["outcome"] == "stored" and body["job_id"].startswith("job_")

        job = http.get(f"/v1/jobs/{body['job_id']}").json()
        assert (job["state"], job["kind"], job["progress"]) == ("done", "memorize", 1.0)
        assert job["result"]["items"] == [{"id": body["id"], "outcome": "stored"}]

        # The other gateway reads the same store.
        with httpx.Client(base_url=cluster.gateways[1].url, timeout=30) as other:
            found = other.post("/v1/remember", json={"query": "redis visibility timeout", "scope": scope}).json()
        assert found["results"][0]["id"] == body["id"]

        assert http.get("/v1/jobs/job_unknown").status_code == 404
        assert http.get("/v1/jobs/job_unknown").json()["error"] == "job_not_found"


def test_readyz_reports_broker_store_and_workers(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.gateways[0].url, timeout=30) as http:
        ready = http.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"store": True, "embedder": True, "broker": True, "workers": True}


def test_mcp_memorize_reports_its_job_over_streamable_http(cluster: Cluster) -> None:
    scope = "github.com/acme/mcp"
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(f"{cluster.gateways[1].url}/mcp") as client:
            created = await client.call_tool(
                "memorize",
                memory("Deploy freeze", "No deploys on Fridays after 15:00 UTC; hotfixes need two approvals.", scope),
            )
            assert not created.is_error, created.content
            seen["created"] = created.structured_content
            job = await client.call_tool("job", {"job_id": created.structured_content["job_id"]})
            seen["job"] = job.structured_content
            found = await client.call_tool("remember", {"query": "friday deploys", "scope": scope})
            seen["found"] = [r["id"] for r in found.structured_content["results"]]

    anyio.run(main)
    assert seen["created"]["outcome"] == "stored"
    assert seen["job"]["state"] == "done"
    assert seen["job"]["result"]["items"][0]["id"] == seen["created"]["id"]
    assert seen["found"][0] == seen["created"]["id"]


def test_parallel_identical_memorize_calls_through_two_gateways_store_one_memory(cluster: Cluster) -> None:
    scope = "github.com/acme/dupes"
    body = memory("Lockfile rule", "Commit uv.lock with every dependency change; CI refuses a stale lock.", scope)
    calls = 20

    def call(i: int) -> dict[str, Any]:
        gateway = cluster.gateways[i % 2]
        response = httpx.post(f"{gateway.url}/v1/memories", json=body, timeout=30)
        assert response.status_code == 201, response.text
        result: dict[str, Any] = response.json()
        return result

    with ThreadPoolExecutor(max_workers=calls) as pool:
        results = list(pool.map(call, range(calls)))

    assert len({r["id"] for r in results}) == 1
    assert sorted(r["outcome"] for r in results) == ["reinforced"] * (calls - 1) + ["stored"]
    embedder = HashEmbedder(64)
    store = open_store(
        f"sqlite:///{cluster.data_dir / 'hivemem.db'}", embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    try:
        assert store.count([scope]) == 1
        assert store.get(results[0]["id"]).access_count == calls - 1  # no reinforcement lost
    finally:
        store.close()


def test_bulk_of_a_thousand_memories_with_two_workers(cluster: Cluster) -> None:
    scope = "github.com/acme/bulk"
    memories = [
        memory(f"Runbook step {i}", f"Step {i} of the failover runbook: check replica lag on node-{i}.", scope)
        for i in range(1000)
    ]
    with httpx.Client(base_url=cluster.gateways[0].url, timeout=120) as http:
        accepted = http.post("/v1/memories/bulk", json={"memories": memories})
        assert accepted.status_code in (201, 202), accepted.text
        job_id = accepted.json()["job_id"]
        ids = accepted.json()["ids"]
        job = _wait_done(http, job_id)
    assert job["result"]["stored"] == 1000
    assert [item["id"] for item in job["result"]["items"]] == ids
    embedder = HashEmbedder(64)
    store = open_store(
        f"sqlite:///{cluster.data_dir / 'hivemem.db'}", embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    try:
        assert store.count([scope]) == 1000
        assert len(store.get_many(ids)) == 1000
    finally:
        store.close()
    # Both workers took part: bulk chunks went to each.
    logs = [w.log_text() for w in cluster.workers]
    assert all("hivemem.memorize_bulk" in log for log in logs), "every worker should have run bulk chunks"


def _wait_done(http: httpx.Client, job_id: str, timeout_s: float = 90) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("done", "failed"):
            assert job["state"] == "done", job
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not done after {timeout_s} s")


def test_edges_asked_for_on_memorize_are_added_by_the_workers(cluster: Cluster) -> None:
    scope = "github.com/acme/goals"
    with httpx.Client(base_url=cluster.gateways[0].url, timeout=30) as http:

        def stored(content: str, **extra: Any) -> str:
            created = http.post("/v1/memories", json=memory(content[:40], content, scope, **extra))
            assert created.status_code == 201, created.text
            return str(created.json()["id"])

        goal = stored("Goal: nightly builds finish before 7 am.", memory_type="goal")
        finding = stored(
            "The nightly build waits 40 minutes on the docs job.",
            related_to=[{"target_id": goal, "relationship_type": "achieves"}],
        )
        lesson = stored(
            "Lesson: run the docs job beside the build, not before it.",
            memory_type="insight",
            related_to=[{"target_id": goal, "relationship_type": "closes"}],
        )
        shown = http.get(f"/v1/memories/{finding}", params={"scope": scope}).json()
    assert shown["state"] == "consolidated"
    edges = {(r["source_id"], r["target_id"], r["type"]) for r in shown["relations"] if r["type"] != "similar"}
    assert edges == {(finding, goal, "achieves"), (lesson, finding, "derived_from")}
