"""The whole distributed write path onto the OpenSearch store: gateway → Redis → worker → OpenSearch.

The server is osmem-server (an in-memory OpenSearch API server). It goes away mid-test, so the
worker meets a store outage: the job is retried with backoff, then completes once the store is back.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest
import redis

from api.bench.local_cluster import free_port
from tests.e2e.helpers import HivememServer
from tests.opensearch_backend import REAL_CLUSTER_URL, start_osmem
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
        "HIVEMEM_JOB_RETRIES": "20",
        "HIVEMEM_JOB_RETRY_BACKOFF_MAX_S": "1",
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

            deadline = time.monotonic() + 30
            while not retried(redis_url):
                assert time.monotonic() < deadline, worker.log_text()
                time.sleep(0.1)
            assert http.get(f"/v1/jobs/{job_id}").json()["state"] in ("queued", "running")
            assert http.get("/v1/dead-letters").json() == []

            osmem, _ = start_osmem(port)  # the store is back (empty: the store recreates its indices)
            deadline = time.monotonic() + 60
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
