"""Tickets: what a runner answers when it is given work, whether the work is done yet or not."""

from __future__ import annotations

from dataclasses import dataclass

from hivemem.jobs import JobState
from hivemem.link_effects import NO_EFFECTS, LinkEffects
from hivemem.model import WriteOutcome
from hivemem.resolution import Resolution

__all__ = ["ItemResult", "Ticket", "item_result"]


@dataclass(frozen=True, slots=True)
class ItemResult:
    """What happened to one incoming memory: the stored memory's id, the outcome and, when it
    superseded one, the memory it replaced; and what its own edges did to their targets.
    ``reason``: why, when resolution by meaning decided it; ``apart_from``: the memory a new one
    resembles and was kept apart from."""

    memory_id: str
    outcome: WriteOutcome
    superseded_id: str | None = None
    effects: LinkEffects = NO_EFFECTS
    reason: str = ""
    apart_from: str | None = None


def item_result(resolution: Resolution) -> ItemResult:
    """What a caller hears of one resolution."""
    superseded = resolution.target_id if resolution.outcome is WriteOutcome.SUPERSEDED else None
    apart = resolution.target_id if resolution.outcome is WriteOutcome.STORED else None
    return ItemResult(
        resolution.memory.id, resolution.outcome, superseded, resolution.effects, resolution.reason, apart
    )


@dataclass(frozen=True, slots=True)
class Ticket:
    """A job, its state when the runner last looked, and, once done within the wait, one result
    per incoming memory, in order.

    ``results`` is None while the job is still queued or running: poll the job by ``job_id``.
    """

    job_id: str
    state: JobState
    results: tuple[ItemResult, ...] | None = None
