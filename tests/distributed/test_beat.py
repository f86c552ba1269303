"""Periodic jobs: ``hivemem beat`` runs the schedule, a worker runs what it sends."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from pathlib import Path

from hivemem.config import Settings
from hivemem.jobs import DeadLetter
from hivemem.model import utcnow
from tests.e2e.helpers import hivemem_command, hivemem_env
from tests.services import CeleryWorker
from workers.celery_app import build_celery
from workers.job_board import RedisJobBoard
from workers.queues import Task


def _schedule_text(data_dir: Path) -> str:
    return b"".join(p.read_bytes() for p in data_dir.glob("celerybeat-schedule*")).decode("latin-1")


def test_beat_starts_with_its_schedule_in_the_data_dir(redis_url: str, tmp_path: Path) -> None:
    log = tmp_path / "beat.log"
    with log.open("wb") as out:
        beat = subprocess.Popen(
            [*hivemem_command(), "beat", "--loglevel=info"],
            env=hivemem_env(tmp_path, HIVEMEM_BROKER_URL=redis_url),
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            # Its state (each entry's last run) persists in the data dir, so a restart keeps the
            # cadence: wait for the file to hold the entries, not for a line in the log.
            deadline = time.monotonic() + 30
            while not all(entry in _schedule_text(tmp_path) for entry in ("prune-dead-letters", "reconcile-jobs")):
                assert beat.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.1)
        finally:
            beat.terminate()
            beat.wait(timeout=30)
    assert "reconcile-jobs" in _schedule_text(tmp_path)


def test_the_prune_job_drops_expired_dead_letters(redis_url: str, tmp_path: Path) -> None:
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
    app = build_celery(Settings(broker_url=redis_url, job_ttl_s=ttl))
    try:
        dropped = app.send_task(Task.PRUNE_DEAD_LETTERS).get(timeout=30)
    finally:
        app.close()
        worker.stop()
    assert dropped == 1
    assert [d.job_ids for d in board.dead_letters()] == [("job_new",)]
