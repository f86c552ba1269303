"""Runners: how the gateway gets jobs done. One interface, two shapes.

:class:`InProcessRunner` (embedded) runs the job functions in the caller's thread: every ticket it
returns is done. :class:`workers.celery_runner.CeleryRunner` (distributed) queues the same job
functions on Celery workers and waits a short while for them. Both record every job on a
:class:`workers.job_board.JobBoard`, so ``GET /v1/jobs/{id}`` works the same in both shapes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from hivemem.coalescer import Coalescer
from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.jobs import Job, JobKind, JobState, failure_text
from hivemem.model import Memory, utcnow
from hivemem.resolution import Resolution
from hivemem.tickets import Ticket, item_result
from search.base import Store
from workers import jobs
from workers.ingest_jobs import outcome_record, run_document_items
from workers.job_board import JobBoard, JobItem, MemoryJobBoard, item_key, item_outcome
from workers.lifecycle_tuning import LifecycleTuning

__all__ = ["InProcessRunner", "Runner"]

log = logging.getLogger(__name__)


class Runner(Protocol):
    """Runs memorize jobs and background reinforcement; thread-safe."""

    @property
    def board(self) -> JobBoard:
        """Where this runner's jobs are recorded."""
        ...

    def memorize(self, memory: Memory) -> Ticket:
        """Resolve and store one memory (id assigned by the caller)."""
        ...

    def memorize_bulk(self, memories: Sequence[Memory], *, wait_s: float | None) -> Ticket:
        """Resolve and store many memories as one job; wait up to ``wait_s`` (None: until done)."""
        ...

    def record_access(self, memory_ids: Sequence[str]) -> None:
        """Queue access reinforcement for these ids; returns at once and never raises."""
        ...

    def ingest(self, job: Job, items: Sequence[JobItem]) -> Ticket:
        """Start an ingest job (one item per document, :mod:`workers.ingest_jobs`); returns at once."""
        ...

    def ready(self) -> dict[str, bool]:
        """Readiness of what the runner depends on (broker, workers), by name."""
        ...

    def queue_depth(self) -> dict[str, int]:
        """Jobs waiting, by queue (``ingest`` in this process; each Celery queue with a broker)."""
        ...

    def warnings(self) -> list[str]:
        """Setups of what the runner depends on that work but can lose jobs (a broker that keeps nothing)."""
        ...

    def drain(self) -> None:
        """Wait for background work queued by this process (tests, shutdown)."""
        ...

    def close(self) -> None:
        """Finish queued work and release resources."""
        ...


def _ticket(job_id: str, resolutions: Sequence[Resolution]) -> Ticket:
    return Ticket(job_id, JobState.DONE, tuple(item_result(r) for r in resolutions))


class InProcessRunner:
    """Runs jobs in this process, in the caller's thread. Thread-safe.

    ``memorize`` needs no lock: the store resolves and writes atomically, so two requests writing
    the same fact at once end with one memory. Writes commit in groups: the memories of calls
    that reach the write step while another unit is being written go in the next unit together,
    in arrival order, so concurrent callers pay for one transaction and one index sync instead of
    queueing for the writer one by one. Access reinforcement goes to one background thread so
    recall never waits on a write.
    """

    def __init__(
        self, store: Store, embedder: Embedder, board: JobBoard | None = None, settings: Settings | None = None
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._board = board or MemoryJobBoard()
        self._settings = settings or Settings.model_construct()
        self._lifecycle = LifecycleTuning()
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hivemem-bg")
        # Ingest jobs run here, one at a time: a bulk ingest uses one core and the embedder's batches,
        # and the server keeps answering (queries go first in the embedder's queue).
        self._ingests = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hivemem-ingest")
        self._waiting_lock = threading.Lock()
        self._waiting_ingests = 0
        self._writes: Coalescer[None, Sequence[Memory], list[Resolution]] = Coalescer(self._write_group)

    @property
    def board(self) -> JobBoard:
        return self._board

    def _run(self, kind: JobKind, memories: Sequence[Memory]) -> Ticket:
        job = Job.of_memories(kind, memories)
        self._board.create(job)
        self._board.start(job.id)
        try:
            # Embedding batches across callers in the embedder's queue; the write batches here.
            resolutions = self._writes.submit(None, jobs.embed_new(self._store, self._embedder, memories))
        except Exception as exc:
            self._board.fail(job.id, failure_text(exc))
            raise
        self._board.record(
            job.id, {m.id: item_outcome(i, r) for i, (m, r) in enumerate(zip(memories, resolutions, strict=True))}
        )
        return _ticket(job.id, resolutions)

    def _write_group(self, _: None, groups: Sequence[Sequence[Memory]]) -> list[list[Resolution]]:
        """One store unit for the memories of every call in ``groups``; each call's resolutions back."""
        memories = [m for g in groups for m in g]
        # Read against the bands of the model writing now (a re-embed may switch it).
        policy = jobs.resolution_policy(self._embedder.model_id, self._lifecycle)
        resolutions = jobs.write_all(self._store, self._embedder, memories, utcnow(), policy)
        answers, start = [], 0
        for group in groups:
            answers.append(resolutions[start : start + len(group)])
            start += len(group)
        return answers

    def memorize(self, memory: Memory) -> Ticket:
        """Run the memorize job now; the ticket is done."""
        return self._run(JobKind.MEMORIZE, [memory])

    def memorize_bulk(self, memories: Sequence[Memory], *, wait_s: float | None = None) -> Ticket:
        """Run a bulk memorize now, embedding every new text in one batch; the ticket is done."""
        return self._run(JobKind.MEMORIZE_BULK, memories)

    def record_access(self, memory_ids: Sequence[str]) -> None:
        """Queue access reinforcement for these ids; returns at once."""
        if memory_ids:
            self._background.submit(self._record_access, list(memory_ids))

    def _record_access(self, memory_ids: list[str]) -> None:
        try:
            jobs.record_access(self._store, memory_ids, utcnow())
        except Exception:  # a failed counter update must never surface to a caller
            log.exception("recording access for %d memories failed", len(memory_ids))

    def ingest(self, job: Job, items: Sequence[JobItem]) -> Ticket:
        """Run an ingest job on the background ingest thread; the ticket is queued."""
        self._board.create(job, items)
        with self._waiting_lock:
            self._waiting_ingests += 1
        self._ingests.submit(self._run_ingest, job.id, list(items))
        return Ticket(job.id, JobState.QUEUED)

    def _run_ingest(self, job_id: str, items: list[JobItem]) -> None:
        with self._waiting_lock:
            self._waiting_ingests -= 1
        self._board.start(job_id)
        try:
            for item, outcome, seconds in run_document_items(self._store, self._embedder, self._settings, items):
                self._board.record(job_id, {item_key(item): outcome_record(item, outcome, seconds)})
        except Exception as exc:  # a failure of the store or the model fails the job, with its reason
            log.exception("ingest job %s failed", job_id)
            self._board.fail(job_id, failure_text(exc))

    def ready(self) -> dict[str, bool]:
        """Nothing beyond the store and the embedder, which the service checks itself."""
        return {}

    def queue_depth(self) -> dict[str, int]:
        """Ingest jobs queued behind the one running; memorize runs in the caller's thread."""
        with self._waiting_lock:
            return {"ingest": self._waiting_ingests}

    def warnings(self) -> list[str]:
        """None: jobs run in the caller's thread and are done when memorize answers."""
        return []

    def drain(self) -> None:
        """Wait for queued background jobs (tests, shutdown)."""
        self._background.submit(lambda: None).result()
        self._ingests.submit(lambda: None).result()

    def close(self) -> None:
        """Finish queued jobs, stop the background threads and close the board's file (if it has one)."""
        self._background.shutdown(wait=True)
        self._ingests.shutdown(wait=True)
        self._board.close()
