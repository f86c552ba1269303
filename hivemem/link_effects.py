"""What the edges a memorize asked for did to their targets, beyond linking them.

A ``supersedes`` edge marks its target no longer valid; a ``closes`` edge to a goal consolidates
the goal's working findings under the closing memory. The caller is told both, by id, so that an
agent closing a goal learns which findings it folded away (and can undo it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NO_EFFECTS", "ClosedGoal", "LinkEffects"]


@dataclass(frozen=True, slots=True)
class ClosedGoal:
    """A goal a ``closes`` edge closed, and the findings it consolidated (none: nothing was left
    working to consolidate)."""

    goal_id: str
    consolidated_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LinkEffects:
    """The effects of one incoming memory's edges: the memories its ``supersedes`` edges marked no
    longer valid, and the goals its ``closes`` edges closed."""

    superseded_ids: tuple[str, ...] = ()
    closed_goals: tuple[ClosedGoal, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.superseded_ids or self.closed_goals)

    def as_record(self) -> dict[str, object]:
        """The JSON a job records (only what happened)."""
        record: dict[str, object] = {}
        if self.superseded_ids:
            record["superseded_by_links"] = list(self.superseded_ids)
        if self.closed_goals:
            record["closed_goals"] = [
                {"goal_id": g.goal_id, "consolidated_ids": list(g.consolidated_ids)} for g in self.closed_goals
            ]
        return record

    @classmethod
    def of_record(cls, record: dict[str, object]) -> LinkEffects:
        """The effects a job recorded (:meth:`as_record`); none where it recorded none."""
        closed = record.get("closed_goals") or []
        superseded = record.get("superseded_by_links") or []
        assert isinstance(closed, list) and isinstance(superseded, list)
        return cls(
            tuple(str(i) for i in superseded),
            tuple(ClosedGoal(str(g["goal_id"]), tuple(str(i) for i in g["consolidated_ids"])) for g in closed),
        )


NO_EFFECTS = LinkEffects()
