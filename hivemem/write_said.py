"""What memorize did, in one sentence an agent reads: the outcome, and what the memory's edges did.

An agent acts on what it is told. "stored" alone hid that a closing note had folded a goal's
findings away, or that a fact had been merged into another memory instead of stored.
"""

from __future__ import annotations

from hivemem.model import GLOBAL_SCOPE, WriteOutcome
from hivemem.resolution import SAME_CONTENT
from hivemem.tickets import ItemResult

__all__ = ["write_said"]


def _where(scope: str) -> str:
    return "the global scope" if scope == GLOBAL_SCOPE else f"scope {scope}"


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids)


def write_said(result: ItemResult, scope: str) -> str:
    """The sentence for one memorize: what happened to the memory, then to each target of its edges."""
    outcome, memory_id, effects = result.outcome, result.memory_id, result.effects
    if outcome is WriteOutcome.REINFORCED and result.reason not in ("", SAME_CONTENT):
        parts = [
            f"a memory saying the same in other words was already in {_where(scope)}: reinforced memory "
            f"{memory_id} instead of storing a copy ({result.reason}; undoable)"
        ]
    elif outcome is WriteOutcome.REINFORCED:
        parts = [
            f"the same fact was already in {_where(scope)}: reinforced memory {memory_id} instead of storing a copy"
        ]
    elif outcome is WriteOutcome.MERGED:
        parts = [
            f"merged into memory {memory_id} of {_where(scope)}, which said much the same; its text is kept "
            "there word for word and recall finds it by its words (undoable: undo restores it as a memory of its own)"
        ]
    elif outcome is WriteOutcome.SUPERSEDED:
        parts = [
            f"stored as memory {memory_id} in {_where(scope)}; it contradicts memory {result.superseded_id}, "
            "which is kept as history, no longer valid (undoable)"
        ]
    elif result.apart_from:
        parts = [
            f"stored as memory {memory_id} in {_where(scope)}, beside memory {result.apart_from}, which it "
            f"resembles but does not repeat ({result.reason}; linked similar)"
        ]
    else:
        parts = [f"stored as memory {memory_id} in {_where(scope)}"]
    if effects.superseded_ids:
        parts.append(f"marked {_ids(effects.superseded_ids)} no longer valid (supersedes; undoable)")
    for goal in effects.closed_goals:
        if goal.consolidated_ids:
            count = len(goal.consolidated_ids)
            parts.append(
                f"closed goal {goal.goal_id} and consolidated its {count} working finding{'s' if count > 1 else ''} "
                f"under this memory ({_ids(goal.consolidated_ids)}; undoable)"
            )
        else:
            parts.append(f"closed goal {goal.goal_id} (it had no working findings to consolidate)")
    return "; ".join(parts)
