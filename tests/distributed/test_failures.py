"""What happens when workers are missing, die mid-batch, or cannot do the job."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from hivemem.jobs import JobState
from tests.e2e.helpers import HivememServer, open_test_store, wait_for_job
from tests.services import CeleryWorker


def test_memorize_answers_202_with_the_job_when_no_worker_is_up(redis_url: str, dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="0.3")
    worker = CeleryWorker(redis_url, data_dir, logs)
    gateway.start()
    try:
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            ready = http.get("/readyz")
            assert (ready.status_code, ready.json()["status"]) == (200, "degraded")
            assert ready.json()["checks"]["workers"] is False and ready.json()["checks"]["broker"] is True

            scope = "github.com/acme/late"
            accepted = http.post(
                "/v1/memories",
                json={"title": "Cache TTL", "content": "Session cache entries live 15 minutes.", "scope": scope},
            )
            assert accepted.status_code == 202, accepted.text
            body = accepted.json()
            assert set(body) == {"id", "scope", "job_id", "state"}
            assert (body["state"], body["scope"]) == ("queued", scope)
            assert http.get(f"/v1/jobs/{body['job_id']}").json()["state"] == "queued"
            assert http.get(f"/v1/memories/{body['id']}", params={"scope": scope}).status_code == 404

            worker.start()
            job = wait_for_job(http, body["job_id"])
            assert job["state"] == "done"
            assert job["result"]["items"] == [{"id": body["id"], "outcome": "stored"}]
            found = http.post("/v1/remember", json={"query": "session cache ttl", "scope": scope}).json()
            assert found["results"][0]["id"] == body["id"]
            assert http.get("/readyz").json()["status"] == "ready"
    finally:
        gateway.stop()
        worker.stop()


def test_kill_9_mid_batch_then_restart_stores_every_memory_exactly_once(
    redis_url: str, dirs: tuple[Path, Path]
) -> None:
    data_dir, logs = dirs
    # A short visibility timeout: the batch the dead worker held is handed out again within seconds.
    # The scope lock it held is a lease it no longer renews, free again as soon (default settings).
    env = {"HIVEMEM_BROKER_VISIBILITY_TIMEOUT_S": "3"}
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="0", **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    scope = "github.com/acme/crash"
    total = 1000
    memories = [
        {
            "title": f"Alert rule {i}",
            "content": f"Alert {i}: page on-call when queue depth {i} exceeds 5k.",
            "scope": scope,
        }
        for i in range(total)
    ]
    gateway.start()
    store = open_test_store(data_dir)
    try:
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            accepted = http.post("/v1/memories/bulk", json={"memories": memories})
            assert accepted.status_code == 202, accepted.text
            job_id, ids = accepted.json()["job_id"], accepted.json()["ids"]

            worker.start(concurrency=1, wait=False)
            # Kill once some 64-memory chunks are written and others are not: the worker is mid-job
            # (a chunk is written in one transaction, so the one it was writing is lost whole).
            deadline = time.monotonic() + 300
            while True:
                stored = store.count([scope])
                if 100 < stored < total:
                    worker.kill()
                    break
                assert time.monotonic() < deadline, f"worker never got mid-batch (stored {stored})"
                time.sleep(0.001)
            at_kill = store.count([scope])
            assert at_kill < total
            assert http.get(f"/v1/jobs/{job_id}").json()["state"] == JobState.RUNNING.value

            worker.start(concurrency=1)
            job = wait_for_job(http, job_id, timeout_s=300)
        assert job["state"] == "done", job
        assert job["result"]["stored"] == total
        assert [item["id"] for item in job["result"]["items"]] == ids
        assert store.count([scope]) == total
        got = store.get_many(ids)
        assert [m.id for m in got] == ids  # each assigned id stored, none twice
        assert len({m.content_hash for m in got}) == total
        assert all(m.access_count == 0 for m in got)  # a redelivered write did not reinforce itself
    finally:
        store.close()
        gateway.stop()
        worker.stop()


def test_a_job_that_cannot_succeed_fails_and_leaves_a_dead_letter(redis_url: str, dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="20")
    # This worker embeds with another model than the store was built with: no retry can fix that.
    worker = CeleryWorker(redis_url, data_dir, logs, HIVEMEM_EMBED_MODEL="hash:32")
    gateway.start()
    worker.start()
    try:
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            failed = http.post(
                "/v1/memories",
                json={"title": "Doomed memory", "content": "This write meets a store of another model."},
            )
            assert failed.status_code == 500, failed.text
            assert failed.json()["error"] == "job_failed"
            assert "EmbeddingMismatchError" in failed.json()["message"]
            letters = http.get("/v1/dead-letters").json()
        assert len(letters) == 1
        assert letters[0]["task"] == "hivemem.embed"
        assert "EmbeddingMismatchError" in letters[0]["error"]
        job_id = letters[0]["job_ids"][0]
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            job = http.get(f"/v1/jobs/{job_id}").json()
        assert job["state"] == "failed" and "EmbeddingMismatchError" in job["error"]
    finally:
        gateway.stop()
        worker.stop()


def test_sigterm_lets_a_worker_finish_close_its_store_and_exit_0(redis_url: str, dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="20")
    worker = CeleryWorker(redis_url, data_dir, logs)
    gateway.start()
    worker.start()
    try:
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            done = http.post(
                "/v1/memories", json={"title": "Graceful stop", "content": "A worker ends its work first."}
            )
            assert done.status_code == 201, done.text
        assert worker.stop() == 0, worker.log_text()  # SIGTERM: warm shutdown
        assert "Traceback" not in worker.log_text()
    finally:
        gateway.stop()
        worker.stop()
