"""Write-time resolution: what memorize does with a new memory given what the scope holds.

This is the place for the whole dedup/contradiction policy (reinforce at cosine ≥ 0.85, check
contradictions between 0.65 and 0.85, supersede or merge). Today it decides on exact duplicates:
the same ``content_hash`` in the same scope reinforces the existing memory instead of inserting.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from hivemem.model import Memory, Source, WriteOutcome

__all__ = ["Resolution", "reinforce", "resolve"]


@dataclass(frozen=True, slots=True)
class Resolution:
    """The decision for one incoming memory: the outcome and the memory to write."""

    outcome: WriteOutcome
    memory: Memory


def reinforce(existing: Memory, incoming: Memory, now: datetime) -> Memory:
    """The existing memory, strengthened by a repeat: one more access, the higher importance, the
    union of tags and files, and the stronger source (a user's confirmation is never downgraded)."""
    source = Source.USER_CONFIRMED if Source.USER_CONFIRMED in (existing.source, incoming.source) else existing.source
    return replace(
        existing,
        importance=max(existing.importance, incoming.importance),
        tags=sorted(set(existing.tags) | set(incoming.tags)),
        related_files=sorted(set(existing.related_files) | set(incoming.related_files)),
        source=source,
        access_count=existing.access_count + 1,
        last_accessed_at=now,
        updated_at=now,
    )


def resolve(incoming: Memory, exact_duplicate: Memory | None, now: datetime) -> Resolution:
    """Decide between storing ``incoming`` and reinforcing the exact duplicate already in its scope.

    A duplicate with ``incoming``'s own id is a redelivered job: the stored memory stays as it is.
    """
    if exact_duplicate is None:
        return Resolution(WriteOutcome.STORED, incoming)
    if exact_duplicate.id == incoming.id:
        return Resolution(WriteOutcome.STORED, exact_duplicate)
    return Resolution(WriteOutcome.REINFORCED, reinforce(exact_duplicate, incoming, now))
