"""Reconciliation: every accepted job ends done or failed, even when the broker lost its message.

Redis hands a message to a worker in two steps (pop it from the queue, then record it as
unacknowledged); a worker killed between the two takes the message with it, and neither kombu's
redelivery nor a dead letter ever sees it. The job board knows every accepted job, so it is the
source of truth: a job that is still open after the broker's visibility timeout, and whose work
is in no queue and held by no worker, is queued again from the payload the board kept. Its tasks
are idempotent (memory ids come from the gateway, items already recorded are skipped), so this
is safe even when the message only looked lost. After ``HIVEMEM_JOB_REPUBLISH_LIMIT`` tries the
job fails and leaves a dead letter.

Beat runs it every ``HIVEMEM_RECONCILE_INTERVAL_S``, and every worker once at start-up.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hivemem.jobs import DeadLetter, JobKind
from workers.job_board import JobItem, OpenJob, RedisJobBoard
from workers.queues import QUEUES

if TYPE_CHECKING:
    import redis

__all__ = ["UNACKED", "ReconcileReport", "jobs_in_broker", "reconcile"]

log = logging.getLogger(__name__)

_JOB_ID = re.compile(rb"job_[0-9a-f]{32}")
# kombu's Redis transport: a queue's messages sit in one list per priority step, and a message a
# worker holds sits in this hash until it is acknowledged.
_PRIORITY_STEPS = (0, 3, 6, 9)
_PRIORITY_SEPARATOR = "\x06\x16"
UNACKED = "unacked"
_PAGE = 500

# Sends one task for a job's pending items: (kind of the job, items).
Republish = Callable[[JobKind, list[JobItem]], None]


def _queue_keys(queues: Iterable[str]) -> list[str]:
    return [
        queue if step == 0 else f"{queue}{_PRIORITY_SEPARATOR}{step}" for queue in queues for step in _PRIORITY_STEPS
    ]


def jobs_in_broker(client: redis.Redis, queues: Sequence[str] = QUEUES) -> set[str]:
    """The ids of the jobs whose work is in the broker: waiting in a queue, or held by a worker.

    Task messages name their jobs in a header (``workers.queues.JOBS_HEADER``); message bodies are
    base64, so only headers can match. Queues are read before the unacknowledged hash: a message
    that moves from one to the other while this reads is seen in one of them.
    """
    found: set[str] = set()
    for key in _queue_keys(queues):
        start = 0
        while True:
            page: list[bytes] = client.lrange(key, start, start + _PAGE - 1)  # type: ignore[assignment]
            for raw in page:
                found.update(m.decode() for m in _JOB_ID.findall(raw))
            if len(page) < _PAGE:
                break
            start += _PAGE
    for _, held in client.hscan_iter(UNACKED, count=_PAGE):
        found.update(m.decode() for m in _JOB_ID.findall(held))
    return found


@dataclass
class ReconcileReport:
    """What one pass did, by job id."""

    checked: int = 0
    still_queued: list[str] = field(default_factory=list)
    republished: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def reconcile(
    board: RedisJobBoard,
    client: redis.Redis,
    republish: Republish,
    *,
    grace_s: float,
    limit: int,
    now: float | None = None,
) -> ReconcileReport:
    """One pass over the jobs left open for longer than ``grace_s`` (the visibility timeout).

    A job whose work is still in the broker is looked at again later; one whose work is gone is
    re-published (its items without an outcome), or failed with a dead letter once it has been
    re-published ``limit`` times.
    """
    now = time.time() if now is None else now
    report = ReconcileReport()
    stale = board.open_jobs(dispatched_before=now - grace_s)
    report.checked = len(stale)
    if not stale:
        return report
    present = jobs_in_broker(client)
    for job in stale:
        if job.id in present:
            board.still_queued(job, now)
            report.still_queued.append(job.id)
        elif job.republished >= limit:
            _give_up(board, job)
            report.failed.append(job.id)
        elif _republish(board, job, republish, now):
            report.republished.append(job.id)
    if report.republished or report.failed:
        log.warning(
            "reconciliation: %d job(s) re-published, %d failed after %d tries",
            len(report.republished), len(report.failed), limit,
        )  # fmt: skip
    return report


def _republish(board: RedisJobBoard, job: OpenJob, republish: Republish, now: float) -> bool:
    items = board.pending_items(job.id)
    if not items:
        return False  # finished while this pass ran, or its payload expired with it
    if board.mark_republished(job, now) == 0:
        return False  # another reconciler took it
    republish(job.kind, items)
    return True


def _give_up(board: RedisJobBoard, job: OpenJob) -> None:
    error = f"its work was lost by the broker and re-published {job.republished} times without finishing"
    board.fail(job.id, error)
    board.add_dead_letter(
        DeadLetter(task="hivemem.reconcile", job_ids=(job.id,), error=error, attempts=job.republished)
    )
