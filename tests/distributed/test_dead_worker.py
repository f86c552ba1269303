"""A worker killed while it holds tasks costs seconds, not the broker's visibility timeout.

The sweep (:mod:`workers.holders`) is checked against a real Redis with kombu's own unacked
hash; end to end, two real workers on default settings (a visibility timeout of an hour) share a
bulk job, one is killed with SIGKILL while it holds a task, and the other finishes the job.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

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
