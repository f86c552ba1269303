"""Periodic jobs: ``hivemem beat`` runs the schedule, a worker runs what it sends."""

from __future__ import annotations

import shelve
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.jobs import DeadLetter
from hivemem.model import Memory, MemoryState, MemoryType, new_memory_id, utcnow
from search import SearchFilter
from tests.e2e.helpers import hivemem_command, hivemem_env, open_test_store
from tests.services import CeleryWorker
from workers.celery_app import build_celery
from workers.job_board import RedisJobBoard
from workers.queues import Task


def _schedule_entries(data_dir: Path) -> set[str]:
    # Read as beat wrote it: shelve picks whichever dbm this Python has (dumb, ndbm or gnu files).
    with shelve.open(str(data_dir / "celerybeat-schedule"), flag="r") as schedule:
        return set(schedule["entries"])


def test_beat_starts_with_its_schedule_in_the_data_dir(redis_url: str, tmp_path: Path) -> None:
    log = tmp_path / "beat.log"
    broker = redis.Redis.from_url(redis_url)
    with log.open("wb") as out:
        beat = subprocess.Popen(
            [*hivemem_command(), "beat", "--loglevel=info"],
            env=hivemem_env(tmp_path, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_RECONCILE_INTERVAL_S="1"),
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            # A reconcile job on the maintenance queue says beat has loaded its schedule and runs it;
            # no worker takes it. Wait for that job, not for a line in the log.
            deadline = time.monotonic() + 300
            while broker.llen("maintenance") == 0:
                assert beat.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.1)
        finally:
            beat.terminate()
            beat.wait(timeout=30)
    # Its state (each entry's last run) persists in the data dir, so a restart keeps the cadence.
    assert {"prune-dead-letters", "reconcile-jobs", "sleep-consolidate"} <= _schedule_entries(tmp_path)


def test_the_prune_job_drops_expired_dead_letters(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ttl = 60
    board = RedisJobBoard.from_url(redis_url, ttl_s=ttl)
    now = utcnow()
    # The new one first: adding a letter also trims letters that expired before it was written.
    board.add_dead_letter(DeadLetter("hivemem.embed", ("job_new",), "new", 6, failed_at=now))
    board.add_dead_letter(
        DeadLetter("hivemem.embed", ("job_old",), "old", 6, failed_at=now - timedelta(seconds=2 * ttl))
    )
    assert {d.job_ids[0] for d in board.dead_letters()} == {"job_old", "job_new"}

    worker = CeleryWorker(redis_url, tmp_path, tmp_path, HIVEMEM_JOB_TTL_S=str(ttl))
    worker.start(queues="maintenance")
    monkeypatch.setenv("HIVEMEM_JOB_TTL_S", str(ttl))
    app = build_celery(Settings(broker_url=redis_url))
    try:
        dropped = app.send_task(Task.PRUNE_DEAD_LETTERS).get(timeout=30)
    finally:
        app.close()
        worker.stop()
    assert dropped == 1
    assert [d.job_ids for d in board.dead_letters()] == [("job_new",)]


def test_the_sleep_job_consolidates_each_scope_on_a_worker_once_per_interval(redis_url: str, tmp_path: Path) -> None:
    texts = [
        "The release branch is cut every second Monday at noon UTC.",
        "The release branch is cut every second Monday at 12:00 UTC.",
        "Every second Monday at noon UTC the release branch is cut.",
    ]
    store, embedder = open_test_store(tmp_path), HashEmbedder(64)
    try:
        for text in texts:
            memory = Memory(
                id=new_memory_id(), scope="team/rel", title=text[:40], content=text, content_hash=content_hash(text)
            )
            memory.embedding = embedder.embed_passages([memory.embedding_text()])[0]
            memory.embedding_model = embedder.model_id
            store.put(memory)
    finally:
        store.close()
    worker = CeleryWorker(redis_url, tmp_path, tmp_path)
    worker.start(queues="consolidate")
    app = build_celery(Settings(broker_url=redis_url))
    try:
        first = app.send_task(Task.SLEEP).get(timeout=60)
        second = app.send_task(Task.SLEEP).get(timeout=60)
    finally:
        app.close()
        worker.stop()
    assert first == {"team/rel": 1}
    assert second == {}  # slept within the interval: not looked at again
    store = open_test_store(tmp_path)
    try:
        every = store.list_memories(SearchFilter(scopes=["team/rel"], states=tuple(MemoryState)), 10)
    finally:
        store.close()
    assert sorted((m.memory_type, m.state) for m in every) == sorted(
        [(MemoryType.FACT, MemoryState.CONSOLIDATED)] * 3 + [(MemoryType.INSIGHT, MemoryState.WORKING)]
    )
