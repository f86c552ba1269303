"""The Celery tasks: thin wrappers that decode ids and payloads and call the job functions.

Write path of one memorize: the gateway records the job and queues ``embed`` (one task may carry
the memories of several concurrent requests, embedded as one batch); ``embed`` queues ``resolve``
with the vectors; ``resolve`` takes the scope's lock, resolves and writes, and records each job's
outcome. A bulk memorize is one ``memorize_bulk`` task per chunk (queue ``bulk``), embedding and writing in one step.

Every task is idempotent (memory ids come from the gateway; the store treats a memory whose id is
already stored as done; outcomes are recorded per item, and items that already have one are
skipped), so redelivery after a crash is safe. Store and broker outages are retried with
exponential backoff; a task that still fails, or fails in a way no retry can fix, marks its jobs
failed and leaves a dead letter. A job whose message the broker lost is queued again by the
``reconcile`` task (:mod:`workers.reconcile`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from celery import Celery
from celery import Task as CeleryTask

from hivemem.codec import memory_from_json, memory_to_json
from hivemem.config import Settings
from hivemem.errors import BrokerUnavailableError, StoreUnavailableError
from hivemem.jobs import DeadLetter, failure_text
from hivemem.model import Memory, utcnow
from hivemem.resolution import Resolution
from search.opensearch.tuning import OpenSearchTuning
from workers import jobs
from workers.context import current
from workers.dispatch import job_ids, queue_job_work, send_job_task
from workers.ingest_jobs import outcome_record, run_document_items
from workers.job_board import ItemOutcome, JobItem, item_key, item_outcome
from workers.job_tuning import JobTuning
from workers.lifecycle import sleep_due, sleep_policy
from workers.lifecycle_tuning import LifecycleTuning
from workers.queues import Task
from workers.reconcile import reconcile
from workers.scope_lock import ScopeBusyError, scope_locks
from workers.sleep_lock import redis_sleep_lock

__all__ = ["register_tasks"]

log = logging.getLogger(__name__)

RETRYABLE = (StoreUnavailableError, BrokerUnavailableError, ScopeBusyError)


class JobTask(CeleryTask):  # type: ignore[misc]
    """Base of hivemem's tasks: late acks, backoff on outages, a dead letter when it fails for good."""

    acks_late = True
    reject_on_worker_lost = True
    autoretry_for = RETRYABLE
    retry_backoff = True
    retry_jitter = True

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        items: Sequence[Any] = args[0] if args and isinstance(args[0], list) else kwargs.get("items", [])
        failed = job_ids(items)
        error = failure_text(exc)
        board = current().board
        try:
            for job_id in failed:
                board.fail(job_id, error)
            board.add_dead_letter(
                DeadLetter(task=self.name, job_ids=tuple(failed), error=error, attempts=self.request.retries + 1)
            )
        except BrokerUnavailableError:
            log.exception("task %s failed (%s) and its dead letter could not be written", task_id, error)


def _memories(items: Sequence[JobItem]) -> list[Memory]:
    return [memory_from_json(item["memory"]) for item in items]


def _start(items: Sequence[JobItem]) -> None:
    board = current().board
    for job_id in job_ids(items):
        board.start(job_id)


def _unrecorded(items: Sequence[JobItem]) -> list[JobItem]:
    """The items without an outcome yet: a redelivered or re-published task redoes only those, so
    a repeat neither reinforces a memory twice nor moves a job's progress."""
    board = current().board
    by_job: dict[str, list[str]] = {}
    for item in items:
        by_job.setdefault(str(item["job_id"]), []).append(item_key(item))
    done = {(job_id, i) for job_id, ids in by_job.items() for i in board.recorded(job_id, ids)}
    return [item for item in items if (str(item["job_id"]), item_key(item)) not in done]


# A scope busy is no outage: its holder is writing, or died and its lease runs out within
# scope_lock.LEASE_S. So waiting for it does not spend the job's retries (JobTuning.job_retries,
# for outages): a worker killed mid-drain left every waiter of its scope timing out once, and a
# task redelivered through several kills ran out of retries and failed a job nothing was wrong
# with. Bounded all the same: this many waits of HIVEMEM_RESOLVE_LOCK_TIMEOUT_S each.
BUSY_RETRIES = 100
_BUSY_COUNTDOWN_S = (0.1, 1.0)  # a short, jittered pause before waiting again


def _resolve_and_record(
    task: CeleryTask, items: Sequence[JobItem], memories: Sequence[Memory], tuning: LifecycleTuning, lock_s: int
) -> None:
    context = current()
    # Read against the bands of the model these vectors are of (a re-embed may switch it).
    policy = jobs.resolution_policy(context.embedder.model_id, tuning)
    try:
        with scope_locks(context.redis, (m.scope for m in memories), wait_s=lock_s):
            resolutions = jobs.write_all(context.store, context.embedder, memories, utcnow(), policy)
    except ScopeBusyError as exc:
        raise task.retry(exc=exc, countdown=random.uniform(*_BUSY_COUNTDOWN_S), max_retries=BUSY_RETRIES) from exc
    _record(items, resolutions)


def _record(items: Sequence[JobItem], resolutions: Sequence[Resolution]) -> None:
    by_job: dict[str, dict[str, ItemOutcome]] = {}
    for item, resolution in zip(items, resolutions, strict=True):
        incoming_id = str(item["memory"]["id"])
        by_job.setdefault(str(item["job_id"]), {})[incoming_id] = item_outcome(int(item["index"]), resolution)
    board = current().board
    for job_id, outcomes in by_job.items():
        board.record(job_id, outcomes)


def register_tasks(app: Celery, settings: Settings) -> None:
    """Register hivemem's tasks on ``app`` with the retry policy of ``settings``."""
    tuning = JobTuning()
    lifecycle = LifecycleTuning()
    lock_s = OpenSearchTuning().resolve_lock_timeout_s
    options: dict[str, Any] = {
        "base": JobTask,
        "bind": True,
        # Bound to this app only: a process that builds several apps (tests, benchmarks) must not
        # see each app's tasks registered on every other one.
        "shared": False,
        "max_retries": tuning.job_retries,
        "retry_backoff_max": tuning.job_retry_backoff_max_s,
    }
    _register_memorize(app, options, lifecycle, lock_s)
    _register_documents_and_access(app, options, settings)
    _register_maintenance(app, options, settings, tuning)
    _register_rerank(app)


def _register_memorize(app: Celery, options: dict[str, Any], lifecycle: LifecycleTuning, lock_s: int) -> None:
    """The memorize path: embed (a batch of calls), resolve under the scopes' locks, and bulk."""

    @app.task(name=Task.EMBED, **options)  # type: ignore[untyped-decorator]
    def embed(self: CeleryTask, items: list[JobItem]) -> int:
        """Embed the memories of one or more memorize jobs in one batch, then queue their resolve."""
        _start(items)
        items = _unrecorded(items)
        if not items:
            return 0
        context = current()
        embedded = jobs.embed_new(context.store, context.embedder, _memories(items))
        resolve_items = [item | {"memory": memory_to_json(m)} for item, m in zip(items, embedded, strict=True)]
        send_job_task(app, Task.RESOLVE, resolve_items)
        return len(items)

    @app.task(name=Task.RESOLVE, **options)  # type: ignore[untyped-decorator]
    def resolve(self: CeleryTask, items: list[JobItem]) -> int:
        """Resolve and write embedded memories under their scopes' locks; record each job's outcome."""
        items = _unrecorded(items)
        if items:
            _resolve_and_record(self, items, _memories(items), lifecycle, lock_s)
        return len(items)

    @app.task(name=Task.MEMORIZE_BULK, **options)  # type: ignore[untyped-decorator]
    def memorize_bulk(self: CeleryTask, items: list[JobItem]) -> int:
        """One chunk of a bulk memorize: embed and resolve in one step (low priority)."""
        _start(items)
        items = _unrecorded(items)
        if not items:
            return 0
        context = current()
        embedded = jobs.embed_new(context.store, context.embedder, _memories(items))
        _resolve_and_record(self, items, embedded, lifecycle, lock_s)
        return len(items)


def _register_documents_and_access(app: Celery, options: dict[str, Any], settings: Settings) -> None:
    """Document ingestion, and the access reinforcement that follows a recall."""

    @app.task(name=Task.INGEST, **options)  # type: ignore[untyped-decorator]
    def ingest(self: CeleryTask, items: list[JobItem]) -> int:
        """Index documents of an ingest job (one per task): read, parse, chunk, embed, write (lowest priority)."""
        _start(items)
        items = _unrecorded(items)
        context = current()
        for item, outcome, seconds in run_document_items(context.store, context.embedder, settings, items):
            context.board.record(str(item["job_id"]), {item_key(item): outcome_record(item, outcome, seconds)})
        return len(items)

    @app.task(name=Task.RECORD_ACCESS, **options)  # type: ignore[untyped-decorator]
    def record_access(self: CeleryTask, memory_ids: list[str], at: str) -> int:
        """Access reinforcement after a recall (counts, last access)."""
        jobs.record_access(current().store, memory_ids, datetime.fromisoformat(at))
        return len(memory_ids)


def _register_maintenance(app: Celery, options: dict[str, Any], settings: Settings, tuning: JobTuning) -> None:
    """What beat schedules: dead-letter pruning, reconciling lost jobs, and sleep."""

    @app.task(name=Task.PRUNE_DEAD_LETTERS, **options)  # type: ignore[untyped-decorator]
    def prune_dead_letters(self: CeleryTask) -> int:
        """Drop dead letters older than the job retention time (scheduled by beat)."""
        return current().board.prune()

    @app.task(name=Task.RECONCILE, **options)  # type: ignore[untyped-decorator]
    def reconcile_jobs(self: CeleryTask) -> dict[str, Any]:
        """Queue again the open jobs whose work the broker lost (beat, and each worker at start-up)."""
        context = current()
        # One pass at a time; a pass that finds the lock taken has nothing to add.
        lock = context.redis.lock("hivemem:lock:reconcile", timeout=max(60, tuning.reconcile_interval_s))
        if not lock.acquire(blocking=False):
            return {"skipped": True}
        try:
            report = reconcile(
                context.board,
                context.redis,
                lambda kind, items: queue_job_work(app, kind, items),
                grace_s=tuning.broker_visibility_timeout_s,
                limit=tuning.job_republish_limit,
            )
        finally:
            with suppress(Exception):
                lock.release()
        return asdict(report)

    @app.task(name=Task.SLEEP, **options)  # type: ignore[untyped-decorator]
    def sleep(self: CeleryTask) -> dict[str, int]:
        """Sleep-consolidate each scope whose last pass is an interval old (scheduled by beat)."""
        context = current()
        # One pass at a time across the pool: a second would plan from what the first is rewriting.
        with redis_sleep_lock(context.redis, wait=False) as held:
            if not held:
                return {"skipped": 1}
            reports = sleep_due(
                context.store,
                context.embedder,
                utcnow(),
                sleep_policy(model_id=context.embedder.model_id),
                timedelta(hours=settings.sleep_interval_hours),
            )
        return {r.scope: len(r.consolidations) for r in reports}


def _register_rerank(app: Celery) -> None:
    """The rerank pool's one task."""

    # Not a JobTask: a rerank is a question with a deadline, not a job. The gateway has answered in
    # first-stage order by the time a retry or a redelivery could run, so neither happens; a message
    # older than its deadline expires unread (the gateway sets ``expires``).
    @app.task(name=Task.RERANK, shared=False, acks_late=False, reject_on_worker_lost=False, max_retries=0)  # type: ignore[untyped-decorator]
    def rerank(query: str, passages: list[str]) -> list[float]:
        """Score each passage for ``query`` with this worker's reranker (``HIVEMEM_RERANK_MODEL``)."""
        return current().reranker.score(query, passages)
