"""A worker killed while it holds tasks costs seconds, not the broker's visibility timeout; a
worker that is alive keeps its task however long it takes.

The sweep (:mod:`workers.holders`) is checked against a real Redis with kombu's own unacked
hash; end to end, two real workers on default settings (a visibility timeout of an hour) share a
bulk job, one is killed with SIGKILL while it holds a task, and the other finishes the job; and
an ingest held for over a minute on a live worker (the page it fetches is sent only when the test
lets it) is fetched once and done once, while the other worker sweeps beside it.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import redis

from tests.e2e.helpers import HivememServer, open_test_store, wait_for_job
from tests.services import CeleryWorker
from workers.holders import ALIVE_S, hold, requeue_dead_holders, unacked_tasks


def unacked(client: redis.Redis, tag: str, task_id: str) -> None:
    """A message as kombu's Redis transport keeps one a worker took: [message, exchange, routing key]."""
    message = {"headers": {"id": task_id, "task": "hivemem.embed"}, "properties": {"priority": 0}, "body": ""}
    client.hset("unacked", tag, json.dumps([message, "", "embed"]))


def victim_holds_a_task(client: redis.Redis, node: str) -> bool:
    held = {k.decode() for k, v in client.hgetall("hivemem:held").items() if v.decode() == node}
    return bool(held & set(unacked_tasks(client)))


def test_only_tasks_of_nodes_without_a_heartbeat_are_put_back(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.set("hivemem:alive:live@host", "1", ex=ALIVE_S)
    unacked(client, "tag-dead", "task-dead")
    unacked(client, "tag-slow", "task-slow")  # held for ever so long by a live worker: left alone
    hold(client, "task-dead", "dead@host")
    hold(client, "task-slow", "live@host")
    hold(client, "task-acked", "live@host")  # finished and acknowledged: only forgotten
    restored: list[str] = []
    assert requeue_dead_holders(client, restored.append) == ["task-dead"]
    assert restored == ["tag-dead"]
    assert client.hgetall("hivemem:held") == {b"task-slow": b"live@host"}
    # Looked at again (the next sweep): nothing more to do.
    assert requeue_dead_holders(client, restored.append) == []
    assert restored == ["tag-dead"]


def test_a_killed_worker_s_tasks_are_done_by_the_other_on_default_settings(
    redis_url: str, dirs: tuple[Path, Path]
) -> None:
    data_dir, logs = dirs
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="0")
    survivor = CeleryWorker(redis_url, data_dir, logs, name="survivor")
    victim = CeleryWorker(redis_url, data_dir, logs, name="victim")
    scope = "github.com/acme/dead-worker"
    total = 640  # ten tasks of 64
    memories = [
        {
            "title": f"Alert rule {i}",
            "content": f"Alert {i}: page on-call when queue depth {i} exceeds 5k.",
            "scope": scope,
        }
        for i in range(total)
    ]
    client = redis.Redis.from_url(redis_url)
    gateway.start()
    store = open_test_store(data_dir)
    try:
        victim.start(concurrency=1)
        survivor.start(concurrency=1)
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            accepted = http.post("/v1/memories/bulk", json={"memories": memories})
            assert accepted.status_code == 202, accepted.text
            job_id, ids = accepted.json()["job_id"], accepted.json()["ids"]
            # Kill the victim while the broker holds a task of it, unacknowledged.
            deadline = time.monotonic() + 120
            while not victim_holds_a_task(client, victim.nodename):
                assert time.monotonic() < deadline, "the victim never took a task"
                time.sleep(0.005)
            victim.kill()
            killed_at = time.monotonic()
            job = wait_for_job(http, job_id, timeout_s=600)  # the visibility timeout is 3600 s
            recovered_s = time.monotonic() - killed_at
        assert job["state"] == "done", job
        assert job["result"]["stored"] == total
        got = store.get_many(ids)
        assert [m.id for m in got] == ids  # each acknowledged memory stored, none twice
        assert store.count([scope]) == total
        print(f"the killed worker's tasks were done {recovered_s:.1f} s after the kill")
        assert "handed 1 task(s) of dead worker(s)" in survivor.log_text()
    finally:
        store.close()
        gateway.stop()
        survivor.stop()
        victim.stop()


PAGE = (
    b"<html><head><title>Queue runbook</title></head><body><article><h1>Queues</h1>"
    b"<p>Drain the zorbit queue before a kernel upgrade, then restart its consumers.</p></article></body></html>"
)
HELD_S = 65  # past a minute: any sweep that went by the age of a task would have taken this one


def test_a_job_held_past_a_minute_on_a_live_worker_is_run_once(redis_url: str, dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    fetches: list[str] = []
    release = threading.Event()

    class SlowPage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetches.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE[:40])
            self.wfile.flush()
            release.wait(timeout=600)  # the rest of the page when the test says so
            self.wfile.write(PAGE[40:])

        def log_message(self, *args: Any) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", 0), SlowPage)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/runbook.html"
    env = {"HIVEMEM_KNOWLEDGE_ALLOW_PRIVATE_URLS": "true", "HIVEMEM_KNOWLEDGE_URL_TIMEOUT_S": "600"}
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, **env)
    holder = CeleryWorker(redis_url, data_dir, logs, name="holder", **env)
    sweeper = CeleryWorker(redis_url, data_dir, logs, name="sweeper", **env)
    client = redis.Redis.from_url(redis_url)
    gateway.start()
    try:
        holder.start(concurrency=1)
        sweeper.start(concurrency=1)
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            accepted = http.post("/v1/knowledge/ingest", json={"paths": [url], "scope": "github.com/acme/ops"})
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["id"]
            deadline = time.monotonic() + 120
            while not fetches:
                assert time.monotonic() < deadline, "no worker fetched the page"
                time.sleep(0.01)
            held_since = time.monotonic()
            while time.monotonic() - held_since < HELD_S:
                # Both workers alive (their heartbeats stand), the job running, the page fetched once.
                alive = {key.decode() for key in client.scan_iter("hivemem:alive:*")}
                assert {f"hivemem:alive:{w.nodename}" for w in (holder, sweeper)} <= alive, alive
                assert http.get(f"/v1/jobs/{job_id}").json()["state"] == "running"
                assert len(fetches) == 1, fetches
                time.sleep(1)
            release.set()
            job = wait_for_job(http, job_id, timeout_s=300)
        assert job["state"] == "done", job
        assert (job["result"]["indexed"], job["result"]["failed"]) == (1, 0), job["result"]
        assert fetches == ["/runbook.html"]  # fetched once: never handed to the other worker
        assert "of dead worker(s)" not in holder.log_text() + sweeper.log_text()
    finally:
        release.set()
        site.shutdown()
        site.server_close()
        gateway.stop()
        holder.stop()
        sweeper.stop()
