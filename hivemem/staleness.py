"""Memories that may be stale: facts that change under a team (infrastructure, versions), progress
notes and failures, past the age at which someone should have said they still hold.

A memory's age here is the time since it was last verified (:attr:`hivemem.model.Memory.last_verified`):
created, said again (a repeat or a duplicate reinforced it), edited, or confirmed by ``verify``.
Decisions, preferences, architecture and strategy notes do not go stale this way: they hold until
something supersedes them. Recall labels a stale memory ``[STALE? last verified N days ago]``, can
leave stale ones out, and ``memory_status`` lists them for a person to verify or forget.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import ClassVar

from pydantic import Field

from hivemem.model import Memory, MemoryType
from hivemem.tuning import Tuning

__all__ = ["StalenessTuning", "stale_days", "stale_label"]


class StalenessTuning(Tuning):
    """How long each kind of memory that goes stale holds without being verified again."""

    group_title: ClassVar[str] = "Staleness"

    stale_fact_days: int = Field(
        default=90,
        ge=1,
        le=36_500,
        description="Days after which a fact not verified since (a host, a version, who owns what) is labelled "
        "stale: a quarter, about how often a team's infrastructure and versions move.",
    )
    stale_progress_days: int = Field(
        default=14,
        ge=1,
        le=36_500,
        description="Days after which a progress note not verified since is labelled stale: two weeks, a sprint.",
    )
    stale_failure_days: int = Field(
        default=30,
        ge=1,
        le=36_500,
        description="Days after which a failure not verified since is labelled stale: a month, by when a failure "
        "that still happens has usually been seen again.",
    )

    def age_of(self, memory_type: MemoryType) -> timedelta | None:
        """How long a memory of ``memory_type`` holds unverified; None for types that do not go stale."""
        days = {
            MemoryType.FACT: self.stale_fact_days,
            MemoryType.PROGRESS: self.stale_progress_days,
            MemoryType.FAILURE: self.stale_failure_days,
        }.get(memory_type)
        return None if days is None else timedelta(days=days)


def stale_days(memory: Memory, now: datetime, tuning: StalenessTuning) -> int | None:
    """Days since ``memory`` was last verified, when that is past its type's age; else None."""
    age = tuning.age_of(memory.memory_type)
    if age is None:
        return None
    since = now - memory.last_verified
    return since.days if since > age else None


def stale_label(days: int) -> str:
    """The label recall puts on a stale memory."""
    return f"[STALE? last verified {days} days ago]"
