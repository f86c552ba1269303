"""The whole distributed write path onto the OpenSearch store: gateway → Redis → worker → OpenSearch.

In the first test a real node of its own is killed with -9 mid-ingest and restarted on its data:
the gateway answers 503 with Retry-After meanwhile, the workers' jobs are retried with backoff, and
every acknowledged memory is there once afterwards. In the second, the gateway's second-model
filler finds what the worker wrote and embeds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import redis

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from search import open_store
from tests.e2e.helpers import HivememServer
from tests.opensearch_backend import REAL_CLUSTER_URL, OpenSearchBackend, private_node
from tests.services import CeleryWorker

pytestmark = pytest.mark.opensearch


def retried(redis_url: str) -> bool:
    """Whether a task has been retried: the result backend records its state as RETRY."""
    client = redis.Redis.from_url(redis_url)
    return any(b'"status": "RETRY"' in (client.get(key) or b"") for key in client.scan_iter("celery-task-meta-*"))


MEMORIES = 30
KILLED_AFTER = 10


def _memory(n: int) -> dict[str, str]:
    # Distinct facts (no two resolve into one), each naming its own host and limit.
    return {
        "title": f"Disk alert on build-{n:02d}",
        "content": f"build-{n:02d} pages the on-call engineer when its scratch disk passes {50 + n} percent full.",
    }


def _until(condition: Callable[[], object], log: Callable[[], str]) -> None:
    """Poll ``condition`` until it holds; the deadline only stops a hung run, with the log to read."""
    deadline = time.monotonic() + 600
    while not condition():
        assert time.monotonic() < deadline, log()
        time.sleep(0.1)


def _done(http: httpx.Client, job_ids: list[str]) -> list[dict[str, object]]:
    return [http.get(f"/v1/jobs/{job_id}").json() for job_id in job_ids]


@pytest.mark.skipif(bool(REAL_CLUSTER_URL), reason="kills and restarts its own node; not for a named cluster")
def test_a_node_killed_mid_ingest_loses_and_doubles_nothing(
    redis_url: str, tmp_path: Path, opensearch_backend: OpenSearchBackend
) -> None:
    if not opensearch_backend.has_knn:
        pytest.skip(
            "kills a real OpenSearch node with -9 and restarts it on its data; " + opensearch_backend.no_knn_reason
        )
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    with private_node() as node:
        store_url = node.url.replace("http://", "opensearch+http://", 1) + "/?index=kill_test"
        env = {
            "HIVEMEM_STORE_URL": store_url,
            "HIVEMEM_OPENSEARCH_REPLICAS": "0",
            # Retries enough to outlast the node's restart on a loaded machine: the test waits for
            # the jobs, not for a number of retries.
            "HIVEMEM_JOB_RETRIES": "100",
            "HIVEMEM_JOB_RETRY_BACKOFF_MAX_S": "5",
        }
        gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="0", **env)
        worker = CeleryWorker(redis_url, data_dir, logs, **env)
        try:
            gateway.start()
            worker.start()
            with httpx.Client(base_url=gateway.url, timeout=30) as http:
                accepted: list[tuple[str, str]] = []
                for n in range(MEMORIES):
                    if n == KILLED_AFTER:
                        # Some jobs done, some queued or running: the node dies under them.
                        _until(
                            lambda: any(j["state"] == "done" for j in _done(http, [j for j, _ in accepted])),
                            worker.log_text,
                        )
                        node.kill()
                        down = http.get(f"/v1/memories/{accepted[0][1]}")
                        assert down.status_code == 503, down.text
                        assert down.json()["error"] == "store_unavailable"
                        assert int(down.headers["Retry-After"]) > 0
                    reply = http.post("/v1/memories", json=_memory(n))
                    assert reply.status_code == 202, reply.text
                    accepted.append((reply.json()["job_id"], reply.json()["id"]))
                _until(lambda: retried(redis_url), worker.log_text)  # a worker met the dead node, and waits to retry
                node.start()  # on the same data folder and port
                jobs = [job for job, _ in accepted]
                _until(lambda: all(j["state"] in ("done", "failed") for j in _done(http, jobs)), worker.log_text)
                states = _done(http, jobs)
                assert [j["state"] for j in states] == ["done"] * MEMORIES, states
                assert http.get("/v1/dead-letters").json() == []
            store = open_store(store_url, embedding_model=HashEmbedder(64).model_id, dimension=64)
            try:
                ids = [memory_id for _, memory_id in accepted]
                kept = store.get_many(ids)
                assert sorted(m.id for m in kept) == sorted(ids)  # none lost
                assert store.count() == MEMORIES  # none doubled
                assert sorted(m.title for m in kept) == sorted(_memory(n)["title"] for n in range(MEMORIES))
            finally:
                store.close()
            assert "StoreUnavailableError" in worker.log_text()
        finally:
            gateway.stop()
            worker.stop()


def metric(http: httpx.Client, name: str) -> float:
    """The value of one unlabelled series of ``/metrics``."""
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not in /metrics")


def test_the_gateway_fills_the_second_vectors_of_what_workers_wrote(
    redis_url: str, tmp_path: Path, opensearch_backend: OpenSearchBackend
) -> None:
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    prefix = f"second_{tmp_path.name.lower()[-12:].replace('-', '_')}"
    env = {"HIVEMEM_STORE_URL": opensearch_backend.url_for(prefix), "HIVEMEM_OPENSEARCH_REPLICAS": "0"}
    if not opensearch_backend.has_knn:
        env["HIVEMEM_RESOLUTION_NEIGHBOURS"] = "0"  # resolution by meaning asks k-NN, which osmem-server lacks
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_SECOND_EMBED_MODEL="hash:32", **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    try:
        gateway.start()
        worker.start()
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            accepted = http.post(
                "/v1/memories",
                json={"title": "Index rollover", "content": "Logs roll over to a new index every 50 GB or 1 day."},
            )
            assert accepted.status_code in (201, 202), accepted.text
            deadline = time.monotonic() + 300
            # The worker wrote it; no nudge reaches the gateway's filler, which polls the store.
            while metric(http, "hivemem_second_leg_vectors_total") < 1:
                assert time.monotonic() < deadline, gateway.log_text()
                time.sleep(0.2)
        store = opensearch_backend.open(HashEmbedder(64), Settings(), None, prefix)
        try:
            assert store.second_vectors_remaining(HashEmbedder(32).model_id) == 0
            query = HashEmbedder(32).embed_queries(["index rollover"])[0]
            scored = store.second_vector_scores(HashEmbedder(32).model_id, query, [accepted.json()["id"]])
            assert [c.id for c in scored] == [accepted.json()["id"]]
        finally:
            store.drop()
    finally:
        gateway.stop()
        worker.stop()
