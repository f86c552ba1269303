"""Failure and progress memories: validated details, and the importance they imply."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hivemem.model import MemoryType
from hivemem.schemas import MemoryCreate

FAILURE = {"error": "TimeoutError: billing client", "component": "billing", "severity": "critical"}


def _create(memory_type: MemoryType, details: dict[str, object], **kw: object) -> MemoryCreate:
    return MemoryCreate.model_validate(
        {
            "title": "Engineering state",
            "content": "What happened, in words.",
            "memory_type": memory_type,
            "details": details,
            **kw,
        }
    )


def test_a_failure_takes_its_importance_from_its_severity_unless_one_is_given() -> None:
    failure = _create(
        MemoryType.FAILURE, {**FAILURE, "root_cause": "DNS", "fix": "pin resolver", "related_test_ids": ["t1"]}
    )
    assert failure.importance == 1.0
    assert _create(MemoryType.FAILURE, {**FAILURE, "severity": "low"}).importance == 0.4
    assert _create(MemoryType.FAILURE, FAILURE, importance=0.2).importance == 0.2


def test_a_progress_note_takes_its_importance_from_its_status() -> None:
    blocked = _create(
        MemoryType.PROGRESS, {"feature": "sso", "status": "blocked", "completion": 40, "blockers": ["IdP"]}
    )
    assert blocked.importance == 0.8
    assert _create(MemoryType.PROGRESS, {"feature": "sso", "status": "done", "completion": 100}).importance == 0.3


@pytest.mark.parametrize(
    ("memory_type", "details", "message"),
    [
        (MemoryType.FAILURE, {"error": "x", "component": "y"}, "needs details severity"),
        (MemoryType.FAILURE, {**FAILURE, "severity": "urgent"}, "details.severity of a failure memory must be one of"),
        (MemoryType.FAILURE, {**FAILURE, "stack": "..."}, "not stack"),
        (MemoryType.FAILURE, {**FAILURE, "error": "  "}, "details.error"),
        (MemoryType.FAILURE, {**FAILURE, "related_test_ids": "t1"}, "details.related_test_ids"),
        (MemoryType.PROGRESS, {"status": "done"}, "needs details feature"),
        (MemoryType.PROGRESS, {"feature": "sso", "status": "done", "completion": 140}, "details.completion"),
        (MemoryType.PROGRESS, {"feature": "sso", "status": "done", "completion": True}, "details.completion"),
    ],
)
def test_malformed_engineering_details_are_refused_with_the_reason(
    memory_type: MemoryType, details: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        _create(memory_type, details)


def test_other_memory_types_keep_free_form_details() -> None:
    assert _create(MemoryType.DECISION, {"anything": [1, 2]}).details == {"anything": [1, 2]}
