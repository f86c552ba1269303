"""Queueing a job's work: the one way tasks carrying job items are sent, by the gateway, by the
embed task (to resolve) and by the reconciler.

Each message names its jobs in the ``hivemem_jobs`` header, so that the reconciler can see which
jobs still have work in the broker without decoding message bodies.
"""

from __future__ import annotations

from collections.abc import Sequence

from celery import Celery

from hivemem.jobs import JobKind
from workers.job_board import JobItem
from workers.queues import JOBS_HEADER, Task

__all__ = ["BULK_CHUNK", "job_ids", "queue_job_work", "send_job_task"]

# Memories per bulk-memorize task: big enough to embed efficiently, small enough that a crashed worker
# redoes little and that several workers share one bulk job.
BULK_CHUNK = 64


def job_ids(items: Sequence[object]) -> list[str]:
    """The distinct job ids of ``items``, in order (maintenance tasks carry none)."""
    return list(dict.fromkeys(str(item["job_id"]) for item in items if isinstance(item, dict) and "job_id" in item))


def send_job_task(app: Celery, task: str, items: list[JobItem]) -> None:
    """Queue ``task`` with ``items`` as its one argument, naming their jobs in the message header."""
    app.send_task(task, args=[items], headers={JOBS_HEADER: job_ids(items)})


def queue_job_work(app: Celery, kind: JobKind, items: list[JobItem]) -> None:
    """Queue a job's items: a memorize on ``embed``, a bulk memorize on ``bulk`` in chunks, an ingest
    on ``ingest``, one document per task."""
    if kind is JobKind.MEMORIZE:
        send_job_task(app, Task.EMBED, items)
        return
    if kind is JobKind.INGEST:
        for item in items:  # one task per document, so workers share a bulk ingest and a crash redoes one
            send_job_task(app, Task.INGEST, [item])
        return
    for start in range(0, len(items), BULK_CHUNK):
        send_job_task(app, Task.MEMORIZE_BULK, items[start : start + BULK_CHUNK])
