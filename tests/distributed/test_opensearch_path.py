"""The whole distributed write path onto the OpenSearch store: gateway → Redis → worker → OpenSearch.

The server is osmem-server (an in-memory OpenSearch API server), or a real cluster. In the first
test it goes away mid-test, so the worker meets a store outage: the job is retried with backoff,
then completes once the store is back. In the second, the gateway's second-model filler finds what
the worker wrote and embeds it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest
import redis

from bench.suite.local_cluster import free_port
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from tests.e2e.helpers import HivememServer
from tests.opensearch_backend import REAL_CLUSTER_URL, OpenSearchBackend, start_osmem
from tests.services import CeleryWorker

pytestmark = pytest.mark.opensearch


def retried(redis_url: str) -> bool:
    """Whether a task has been retried: the result backend records its state as RETRY."""
    client = redis.Redis.from_url(redis_url)
    return any(b'"status": "RETRY"' in (client.get(key) or b"") for key in client.scan_iter("celery-task-meta-*"))


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


@pytest.mark.skipif(bool(REAL_CLUSTER_URL), reason="stops and restarts its own osmem-server; not for a real cluster")
def test_a_store_outage_is_retried_with_backoff_until_the_job_is_done(redis_url: str, tmp_path: Path) -> None:
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    port = free_port()
    try:
        osmem, url = start_osmem(port)
    except (ImportError, OSError, RuntimeError) as exc:
        pytest.skip(f"osmem-server cannot start here ({exc})")
    env = {
        "HIVEMEM_STORE_URL": url.replace("http://", "opensearch+http://", 1) + "/?index=retry_test",
        "HIVEMEM_OPENSEARCH_REPLICAS": "0",
        # Retries enough to outlast the store's restart on a loaded machine (about 250 s with jitter):
        # the test waits for the restart, not for a number of retries.
        "HIVEMEM_JOB_RETRIES": "100",
        "HIVEMEM_JOB_RETRY_BACKOFF_MAX_S": "5",
        # osmem-server answers no k-NN query, which resolution by meaning asks for.
        "HIVEMEM_RESOLUTION_NEIGHBOURS": "0",
    }
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="0", **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    try:
        gateway.start()
        stop(osmem)  # the store goes away before any worker has touched it
        worker.start()
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            accepted = http.post(
                "/v1/memories",
                json={"title": "Index rollover", "content": "Logs roll over to a new index every 50 GB or 1 day."},
            )
            assert accepted.status_code == 202, accepted.text
            job_id, memory_id = accepted.json()["job_id"], accepted.json()["id"]

            deadline = time.monotonic() + 300
            while not retried(redis_url):
                assert time.monotonic() < deadline, worker.log_text()
                time.sleep(0.1)
            assert http.get(f"/v1/jobs/{job_id}").json()["state"] in ("queued", "running")
            assert http.get("/v1/dead-letters").json() == []

            osmem, _ = start_osmem(port)  # the store is back (empty: the store recreates its indices)
            deadline = time.monotonic() + 300
            while (job := http.get(f"/v1/jobs/{job_id}").json())["state"] not in ("done", "failed"):
                assert time.monotonic() < deadline, worker.log_text()
                time.sleep(0.1)
            assert job["state"] == "done", job
            assert job["result"]["items"] == [{"id": memory_id, "outcome": "stored"}]
            stored = http.get(f"/v1/memories/{memory_id}")  # global: the memorize named no scope
            assert stored.status_code == 200, stored.text
            assert stored.json()["title"] == "Index rollover"
        assert "StoreUnavailableError" in worker.log_text()
    finally:
        gateway.stop()
        worker.stop()
        stop(osmem)


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
