"""Nothing accepted is lost: jobs whose broker message vanished are found and queued again.

The reconciliation pass is checked against a real Redis; the end-to-end tests run real gateways,
workers and beat, kill workers (and Redis itself) with SIGKILL, and count what was stored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from hivemem.jobs import Job, JobKind, JobState, new_job_id
from hivemem.model import Memory
from search import Store
from tests.e2e.helpers import HivememServer, hivemem_command, hivemem_env, open_test_store, wait_for_job
from tests.services import CeleryWorker, RedisServer, redis_server_binary
from workers.celery_app import build_celery
from workers.celery_runner import job_item
from workers.dispatch import send_job_task
from workers.job_board import JobItem, OpenJob, RedisJobBoard
from workers.queues import Task
from workers.reconcile import jobs_in_broker, reconcile

# Short timeouts: a message held by a dead worker comes back within seconds, a lost one is
# re-published as soon, and beat looks every second.
FAST = {
    "HIVEMEM_BROKER_VISIBILITY_TIMEOUT_S": "2",
    "HIVEMEM_RESOLVE_LOCK_TIMEOUT_S": "2",
    "HIVEMEM_RECONCILE_INTERVAL_S": "1",
    "HIVEMEM_MEMORIZE_WAIT_S": "0",
}


def items_of(job: Job, count: int = 1) -> list[JobItem]:
    return [
        job_item(job.id, i, Memory(id=f"{job.id}-{i}", scope="s", title="t", content="c", content_hash=str(i)))
        for i in range(count)
    ]


def open_job(board: RedisJobBoard, job_id: str) -> OpenJob:
    return next(job for job in board.open_jobs(time.time() + 1000) if job.id == job_id)


# -- one reconciliation pass, against a real Redis ---------------------------------------------


def test_a_pass_requeues_lost_work_leaves_queued_work_and_fails_after_the_limit(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    board = RedisJobBoard(client)
    app = build_celery_for(redis_url)
    lost, waiting, exhausted, fresh = (Job(id=new_job_id(), kind=JobKind.MEMORIZE) for _ in range(4))
    payloads = {job.id: items_of(job) for job in (lost, waiting, exhausted, fresh)}
    for job in (lost, waiting, exhausted, fresh):
        board.create(job, payloads[job.id])
    send_job_task(app, Task.EMBED, payloads[waiting.id])  # its message is in the queue
    for _ in range(2):  # `exhausted` was re-published twice already
        board.mark_republished(open_job(board, exhausted.id), time.time())
    sent: list[tuple[JobKind, list[JobItem]]] = []
    # `fresh` was seen queued a moment ago: inside the grace period it is not looked at.
    board.still_queued(open_job(board, fresh.id), time.time() + 100)

    report = reconcile(board, client, lambda kind, items: sent.append((kind, items)), grace_s=0, limit=2)

    assert report.checked == 3
    assert report.republished == [lost.id]
    assert sent == [(JobKind.MEMORIZE, payloads[lost.id])]
    assert report.still_queued == [waiting.id]
    assert report.failed == [exhausted.id]
    assert board.get(exhausted.id).state is JobState.FAILED
    assert "lost by the broker" in (board.get(exhausted.id).error or "")
    assert [d.job_ids for d in board.dead_letters()] == [(exhausted.id,)]
    # A second pass right away: the re-published job is no longer stale, the failed one is gone.
    again = reconcile(board, client, lambda kind, items: sent.append((kind, items)), grace_s=1, limit=2)
    assert (again.republished, again.failed, len(sent)) == ([], [], 1)
    app.close()


def test_only_items_without_an_outcome_are_requeued_and_done_jobs_leave_the_index(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    board = RedisJobBoard(client)
    job = Job(id=new_job_id(), kind=JobKind.MEMORIZE_BULK, total=3)
    items = items_of(job, 3)
    board.create(job, items)
    first = items[0]["memory"]["id"]
    board.record(job.id, {first: {"index": 0, "id": first, "outcome": "stored"}})
    assert board.recorded(job.id, [i["memory"]["id"] for i in items]) == {first}
    assert board.pending_items(job.id) == items[1:]
    board.record(
        job.id,
        {i["memory"]["id"]: {"index": n, "id": i["memory"]["id"], "outcome": "stored"} for n, i in enumerate(items)},
    )
    assert board.get(job.id).state is JobState.DONE
    assert board.open_jobs(time.time() + 1) == []
    assert board.pending_items(job.id) == []


def test_the_broker_scan_sees_queued_and_held_messages_only(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    app = build_celery_for(redis_url)
    queued, held = Job(id=new_job_id(), kind=JobKind.MEMORIZE), Job(id=new_job_id(), kind=JobKind.MEMORIZE)
    send_job_task(app, Task.EMBED, items_of(queued))
    send_job_task(app, Task.MEMORIZE_BULK, items_of(held))
    # What a worker does when it takes a message: pop it, then keep it as unacknowledged.
    message = client.rpop("bulk")
    assert message is not None
    client.hset("unacked", "tag-1", b"[" + message + b', "", "bulk"]')
    assert jobs_in_broker(client) == {queued.id, held.id}
    client.hdel("unacked", "tag-1")  # the window the reconciler exists for: popped, not yet held
    assert jobs_in_broker(client) == {queued.id}
    app.close()


def build_celery_for(redis_url: str) -> Any:
    from hivemem.config import Settings

    return build_celery(Settings(broker_url=redis_url))


# -- end to end: real gateway, workers, beat -----------------------------------------------------


class Beat:
    """``hivemem beat`` as a subprocess."""

    def __init__(self, broker_url: str, data_dir: Path, log_dir: Path, **env: str) -> None:
        import subprocess

        self._log = (log_dir / "beat.log").open("wb")
        self.process = subprocess.Popen(
            [*hivemem_command(), "beat", "--loglevel=info"],
            env=hivemem_env(data_dir, HIVEMEM_BROKER_URL=broker_url, **env),
            cwd=data_dir,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._log.close()


@pytest.fixture
def beat(redis_url: str, dirs: tuple[Path, Path]) -> Iterator[Beat]:
    running = Beat(redis_url, *dirs, **FAST)
    yield running
    running.stop()


def accept(http: httpx.Client, scope: str, count: int) -> list[dict[str, Any]]:
    """``count`` memorize calls from 8 clients at once, each answered 202 (no worker is up)."""

    def one(i: int) -> dict[str, Any]:
        body = {"title": f"Runbook step {i}", "content": f"Step {i}: drain node {i} before the kernel upgrade.",
                "scope": scope}  # fmt: skip
        response = http.post("/v1/memories", json=body)
        assert response.status_code == 202, response.text
        accepted: dict[str, Any] = response.json()
        return accepted

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(count)))


def wait_all_final(http: httpx.Client, accepted: list[dict[str, Any]], timeout_s: float = 300) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    return [wait_for_job(http, a["job_id"], timeout_s=max(1.0, deadline - time.monotonic())) for a in accepted]


def assert_each_stored_once(
    store: Store, scope: str, accepted: list[dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    assert [j["state"] for j in jobs] == ["done"] * len(accepted), [j for j in jobs if j["state"] != "done"][:3]
    assert [j["result"]["items"] for j in jobs] == [[{"id": a["id"], "outcome": "stored"}] for a in accepted]
    assert store.count([scope]) == len(accepted)
    stored = store.get_many([a["id"] for a in accepted])
    assert len(stored) == len(accepted)
    assert len({m.content_hash for m in stored}) == len(accepted)
    assert all(m.access_count == 0 for m in stored)  # no work was done twice


def test_jobs_whose_message_vanished_are_requeued_and_done(redis_url: str, dirs: tuple[Path, Path], beat: Beat) -> None:
    data_dir, logs = dirs
    scope = "github.com/acme/vanished"
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, **FAST)
    worker = CeleryWorker(redis_url, data_dir, logs, **FAST)
    gateway.start()
    store = open_test_store(data_dir)
    try:
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            accepted = accept(http, scope, 12)
            client = redis.Redis.from_url(redis_url)
            assert jobs_in_broker(client) == {a["job_id"] for a in accepted}
            client.delete("embed")  # every message gone, as a crash between pop and ack loses one
            assert jobs_in_broker(client) == set()
            worker.start()
            jobs = wait_all_final(http, accepted)
        assert_each_stored_once(store, scope, accepted, jobs)
        board = RedisJobBoard(redis.Redis.from_url(redis_url))
        assert board.open_jobs(time.time() + 1) == []
    finally:
        store.close()
        gateway.stop()
        worker.stop()


@pytest.mark.crash
def test_workers_killed_mid_drain_lose_no_job_and_do_none_twice(
    redis_url: str, dirs: tuple[Path, Path], beat: Beat, request: pytest.FixtureRequest
) -> None:
    rounds: int = request.config.getoption("--crash-rounds")
    data_dir, logs = dirs
    scope = "github.com/acme/drain"
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, **FAST)
    worker = CeleryWorker(redis_url, data_dir, logs, **FAST)
    gateway.start()
    store = open_test_store(data_dir)
    kills = 0
    try:
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            accepted = accept(http, scope, max(300, 50 * rounds))
            for _ in range(rounds):
                before = store.count([scope])
                assert before < len(accepted), "the backlog drained before every kill happened"
                worker.start(concurrency=2, wait=False)
                deadline = time.monotonic() + 300
                # Kill at the first write of this round: the worker is in the middle of its drain.
                while store.count([scope]) == before:
                    assert time.monotonic() < deadline, f"the worker wrote nothing:\n{worker.log_text()[-3000:]}"
                    time.sleep(0.001)
                worker.kill()
                kills += 1
            worker.start(concurrency=2)
            jobs = wait_all_final(http, accepted, timeout_s=300)
        assert kills == rounds
        assert_each_stored_once(store, scope, accepted, jobs)
    finally:
        store.close()
        gateway.stop()
        worker.stop()


@pytest.mark.crash
def test_redis_killed_with_a_backlog_loses_no_job(tmp_path: Path, dirs: tuple[Path, Path]) -> None:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does it)")
    broker = RedisServer(binary, tmp_path / "aof", appendonly=True)
    (tmp_path / "aof").mkdir()
    broker.start()
    data_dir, logs = dirs
    scope = "github.com/acme/aof"
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=broker.url, **FAST)
    worker = CeleryWorker(broker.url, data_dir, logs, **FAST)
    store = open_test_store(data_dir)
    try:
        gateway.start()
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            accepted = accept(http, scope, 100)
            broker.kill()  # SIGKILL: no shutdown, no final write of the append-only file
            broker.start()
            worker.start()
            jobs = wait_all_final(http, accepted)
        assert_each_stored_once(store, scope, accepted, jobs)
    finally:
        store.close()
        gateway.stop()
        worker.stop()
        broker.stop()
