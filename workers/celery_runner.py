"""The distributed shape's runner: the gateway side of the Celery queues.

It records each job on the Redis job board, queues its task by name (the gateway needs no worker
code, no model and no store write access) and waits up to ``HIVEMEM_MEMORIZE_WAIT_S`` for the
outcome; a job still running then gets a ticket without results, which the API answers with 202
and the job id.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from celery import Celery

from hivemem.codec import memory_to_json
from hivemem.config import Settings
from hivemem.errors import BrokerUnavailableError, JobError
from hivemem.jobs import Job, JobKind, JobState
from hivemem.link_effects import LinkEffects
from hivemem.model import Memory, WriteOutcome, utcnow
from hivemem.tickets import ItemResult, Ticket
from workers.batcher import MicroBatcher
from workers.celery_app import build_celery
from workers.dispatch import queue_job_work, send_job_task
from workers.job_board import JobBoard, JobItem, RedisJobBoard
from workers.job_tuning import JobTuning
from workers.models.embed_tuning import EmbedTuning
from workers.queues import QUEUES, Task

__all__ = ["CeleryRunner", "job_item"]

log = logging.getLogger(__name__)


def job_item(job_id: str, index: int, memory: Memory) -> JobItem:
    """The wire form of one memory of one job: ``{"job_id", "index", "memory"}`` (no vector yet)."""
    return {"job_id": job_id, "index": index, "memory": memory_to_json(replace(memory, embedding=None))}


class CeleryRunner:
    """Queues memorize jobs on Celery workers over Redis. Thread-safe."""

    def __init__(
        self,
        settings: Settings,
        app: Celery | None = None,
        board: RedisJobBoard | None = None,
        jobs: JobTuning | None = None,
    ) -> None:
        self._settings = settings
        self._jobs = jobs or JobTuning()
        self._app = app or build_celery(settings)
        self._board = board or RedisJobBoard.from_url(settings.broker_url, self._jobs.job_ttl_s)
        self._batcher = MicroBatcher(
            lambda items: self._send(Task.EMBED, items),
            window_s=self._jobs.embed_batch_window_ms / 1000,
            max_items=EmbedTuning().embed_batch_size,
        )

    @property
    def board(self) -> JobBoard:
        return self._board

    def _send(self, task: str, items: list[JobItem]) -> None:
        self._sending(task, lambda: send_job_task(self._app, task, items))

    @staticmethod
    def _sending(task: str, send: Callable[[], None]) -> None:
        try:
            send()
        except Exception as exc:  # kombu raises its own and socket errors; callers need one class
            raise BrokerUnavailableError(f"cannot queue {task}: {exc}") from exc

    def _queue(self, job: Job, items: list[JobItem], send: Callable[[], None]) -> None:
        """Record ``job`` with its items, then ``send`` its tasks; a job that could not be queued
        is marked failed. From here on the job board knows the job, so even a message the broker
        loses later is queued again (:mod:`workers.reconcile`)."""
        self._board.create(job, items)
        try:
            send()
        except BrokerUnavailableError as exc:
            self._board.fail(job.id, str(exc))
            raise

    def memorize(self, memory: Memory) -> Ticket:
        """Queue one memorize (batched with concurrent ones for embedding); wait for its outcome."""
        job = Job.of_memories(JobKind.MEMORIZE, [memory])
        item = job_item(job.id, 0, memory)
        self._queue(job, [item], lambda: self._batcher.submit(item))
        return self._wait(job.id, self._jobs.memorize_wait_s)

    def memorize_bulk(self, memories: Sequence[Memory], *, wait_s: float | None) -> Ticket:
        """Queue a bulk memorize as ``memorize_bulk`` tasks of ``BULK_CHUNK`` memories; wait up to ``wait_s``."""
        job = Job.of_memories(JobKind.MEMORIZE_BULK, memories)
        items = [job_item(job.id, i, m) for i, m in enumerate(memories)]

        def send() -> None:
            self._sending(Task.MEMORIZE_BULK, lambda: queue_job_work(self._app, job.kind, items))

        self._queue(job, items, send)
        return self._wait(job.id, wait_s)

    def ingest(self, job: Job, items: Sequence[JobItem]) -> Ticket:
        """Queue an ingest job, one ``ingest`` task per document; returns at once."""

        def send() -> None:
            self._sending(Task.INGEST, lambda: queue_job_work(self._app, job.kind, list(items)))

        self._queue(job, list(items), send)
        return Ticket(job.id, JobState.QUEUED)

    def _wait(self, job_id: str, wait_s: float | None) -> Ticket:
        deadline = None if wait_s is None else time.monotonic() + wait_s
        pause = 0.005
        while True:
            job = self._board.get(job_id)
            if job.state is JobState.DONE and job.result is not None:
                items = job.result["items"]
                results = tuple(
                    ItemResult(
                        i["id"],
                        WriteOutcome(i["outcome"]),
                        i.get("superseded"),
                        LinkEffects.of_record(i),
                        i.get("reason", ""),
                        i.get("apart_from"),
                    )
                    for i in items
                )
                return Ticket(job_id, job.state, results)
            if job.state is JobState.FAILED:
                raise JobError(f"job {job_id} failed: {job.error}")
            if deadline is not None and time.monotonic() >= deadline:
                return Ticket(job_id, job.state)
            remaining = 1.0 if deadline is None else max(0.0, deadline - time.monotonic())
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.1)

    def record_access(self, memory_ids: Sequence[str]) -> None:
        """Queue access reinforcement on the maintenance queue; a broker outage only logs."""
        if not memory_ids:
            return
        try:
            self._app.send_task(Task.RECORD_ACCESS, args=[list(memory_ids), utcnow().isoformat()])
        except Exception:  # reinforcement is best effort: recall must not fail for it
            log.warning("queueing access reinforcement failed", exc_info=True)

    def ready(self) -> dict[str, bool]:
        """The broker answers, and at least one worker answers a ping within half a second."""
        broker = self._board.ping()
        workers = False
        if broker:
            try:
                workers = bool(self._app.control.ping(timeout=0.5))
            except Exception:
                log.warning("pinging the workers failed", exc_info=True)
        return {"broker": broker, "workers": workers}

    def queue_depth(self) -> dict[str, int]:
        """Messages waiting in each Celery queue; empty when the broker does not answer."""
        try:
            return self._board.queue_lengths(QUEUES)
        except BrokerUnavailableError:
            return {}

    def warnings(self) -> list[str]:
        """A warning when the broker keeps nothing across its own restart."""
        warning = self._board.persistence_warning()
        return [] if warning is None else [warning]

    def drain(self) -> None:
        """Nothing runs in this process."""

    def close(self) -> None:
        """Release the broker connections."""
        self._app.close()
        self._board.close()
