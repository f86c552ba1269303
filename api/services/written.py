"""What a memorize answers, made from what its job wrote; and a batch's memories put in order."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hivemem.answers import ClosedGoalPublic, MemorizeResult
from hivemem.model import Memory
from hivemem.tickets import Ticket
from hivemem.write_said import write_said

__all__ = ["in_order", "written_results"]


def written_results(ticket: Ticket, memories: list[Memory]) -> list[MemorizeResult]:
    # A reinforced memory is in the incoming memory's scope: that is where the duplicate was looked for.
    return [
        MemorizeResult(
            id=r.memory_id,
            outcome=r.outcome,
            scope=m.scope,
            # An explicit `supersedes` link replaced what it names as much as a contradiction found.
            superseded_id=r.superseded_id or next(iter(r.effects.superseded_ids), None),
            superseded_by_links=list(r.effects.superseded_ids) or None,
            closed_goals=[
                ClosedGoalPublic(goal_id=g.goal_id, consolidated_ids=list(g.consolidated_ids))
                for g in r.effects.closed_goals
            ]
            or None,
            job_id=ticket.job_id,
            said=write_said(r, m.scope),
        )
        for r, m in zip(ticket.results or (), memories, strict=True)
    ]


def in_order(memories: list[Memory]) -> list[Memory]:
    """``memories`` with strictly increasing ``created_at``: a batch is in order, so the turns of a
    thread it carries keep theirs (two memories of one microsecond would fall back to id order)."""
    out: list[Memory] = []
    for memory in memories:
        if out and memory.created_at <= out[-1].created_at:
            later = out[-1].created_at + timedelta(microseconds=1)
            memory = replace(memory, created_at=later, updated_at=later)
        out.append(memory)
    return out
