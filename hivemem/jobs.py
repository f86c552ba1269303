"""Jobs: what a caller can see of work done for it in the background.

A job is created by the gateway before its task is queued, so its id can be answered at once;
workers move it through ``queued → running → done | failed`` and count progress in items.
A task that fails for good (retries exhausted, or an error no retry can fix) leaves a
:class:`DeadLetter` beside the failed job, so an operator can see what was lost and why.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from hivemem.model import Memory, utcnow

__all__ = ["DeadLetter", "Job", "JobKind", "JobState", "failure_text", "new_job_id"]


def new_job_id() -> str:
    """A fresh job id (prefixed so it is never mistaken for a memory id)."""
    return f"job_{uuid.uuid4().hex}"


def failure_text(exc: BaseException) -> str:
    """How a failed job's error reads: the exception's class and message."""
    return f"{type(exc).__name__}: {exc}"


class JobKind(StrEnum):
    """What a job does."""

    MEMORIZE = "memorize"
    MEMORIZE_BULK = "memorize_bulk"
    INGEST = "ingest"
    REEMBED = "reembed"


class JobState(StrEnum):
    """Where a job is. ``done`` and ``failed`` are final."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        """True for ``done`` and ``failed``: the job will not change again."""
        return self in (JobState.DONE, JobState.FAILED)


@dataclass(slots=True)
class Job:
    """One job as callers see it. ``progress`` is done/total items (0 when nothing is done).

    ``owner`` is the principal that asked for the work and ``scopes`` the scopes it writes in: the
    record names memory ids, outcomes, file paths and errors, so only its owner, or an admin of
    every scope it touches, may read it. A job of no owner (the server's re-embedding) is the
    admins' on ``*``.
    """

    id: str
    kind: JobKind
    state: JobState = JobState.QUEUED
    total: int = 1
    done: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    owner: str = ""
    scopes: tuple[str, ...] = ()

    @classmethod
    def of_memories(cls, kind: JobKind, memories: Sequence[Memory]) -> Job:
        """A new job writing ``memories``, owned by their author, in their scopes."""
        owner = memories[0].author if memories else ""
        return cls(
            id=new_job_id(),
            kind=kind,
            total=len(memories),
            owner=owner,
            scopes=tuple(sorted({m.scope for m in memories})),
        )

    @property
    def progress(self) -> float:
        """The fraction of items done, 0.0-1.0."""
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A task that failed for good: which, for which jobs, after how many attempts, and why."""

    task: str
    job_ids: tuple[str, ...]
    error: str
    attempts: int
    failed_at: datetime = field(default_factory=utcnow)
