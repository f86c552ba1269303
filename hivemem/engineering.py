"""Engineering state: the structured ``details`` of failure, progress and handoff memories.

A failure or a progress note is a ``memorize`` like any other, so agents keep one small tool
surface; what makes it state is a validated ``details`` object. A failure names its ``error``,
``component`` and ``severity`` (and may name ``root_cause``, ``fix``, ``related_test_ids``); a
progress note names its ``feature`` and ``status`` (and may give ``completion`` in percent,
``blockers``, ``notes``); a session handoff gives its ``summary`` (and may list ``completed``,
``in_progress``, ``blocked`` and ``next_steps``). Severity and status set the importance when the
caller gives none, so a critical failure outranks a low one in recall.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hivemem.model import MemoryType

__all__ = [
    "SEVERITY_IMPORTANCE",
    "STATUS_IMPORTANCE",
    "details_json_schema",
    "details_shape_problem",
    "handoff_content",
    "implied_importance",
]

SEVERITY_IMPORTANCE: Mapping[str, float] = {"low": 0.4, "medium": 0.6, "high": 0.8, "critical": 1.0}
# A blocked feature is what a team most needs to see; a done one matters less each day.
STATUS_IMPORTANCE: Mapping[str, float] = {"planned": 0.4, "in_progress": 0.6, "blocked": 0.8, "done": 0.3}

_TEXT, _TEXTS = "text", "list of texts"
# memory type -> (required fields, optional fields), each field -> what it must be
_SHAPES: Mapping[MemoryType, tuple[Mapping[str, str], Mapping[str, str]]] = {
    MemoryType.FAILURE: (
        {"error": _TEXT, "component": _TEXT, "severity": "one of " + ", ".join(SEVERITY_IMPORTANCE)},
        {"root_cause": _TEXT, "fix": _TEXT, "related_test_ids": _TEXTS},
    ),
    MemoryType.PROGRESS: (
        {"feature": _TEXT, "status": "one of " + ", ".join(STATUS_IMPORTANCE)},
        {"completion": "a number from 0 to 100 (percent)", "blockers": _TEXTS, "notes": _TEXT},
    ),
    MemoryType.HANDOFF: (
        {"summary": _TEXT},
        {"completed": _TEXTS, "in_progress": _TEXTS, "blocked": _TEXTS, "next_steps": _TEXTS},
    ),
}
_LISTS = frozenset({"related_test_ids", "blockers", "completed", "in_progress", "blocked", "next_steps"})


def _fits(name: str, value: Any, memory_type: MemoryType) -> bool:
    if name == "severity":
        return value in SEVERITY_IMPORTANCE
    if name == "status":
        return value in STATUS_IMPORTANCE
    if name == "completion":
        return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 100
    if name in _LISTS:
        return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    return isinstance(value, str) and bool(value.strip())


def details_shape_problem(memory_type: MemoryType, details: Mapping[str, Any]) -> str | None:
    """What is wrong with the ``details`` of a failure or progress memory, or None (other types,
    and well-formed details)."""
    shape = _SHAPES.get(memory_type)
    if shape is None:
        return None
    required, optional = shape
    kind = memory_type.value
    missing = [name for name in required if name not in details]
    if missing:
        wanted = "; ".join(f"{n}: {what}" for n, what in required.items())
        return f"a {kind} memory needs details {', '.join(missing)} ({wanted})"
    unknown = sorted(set(details) - set(required) - set(optional))
    if unknown:
        allowed = ", ".join([*required, *optional])
        return f"a {kind} memory's details take {allowed}; not {', '.join(unknown)}"
    for name, what in {**required, **optional}.items():
        if name in details and not _fits(name, details[name], memory_type):
            return f"details.{name} of a {kind} memory must be {what}, not {details[name]!r}"
    return None


def implied_importance(memory_type: MemoryType, details: Mapping[str, Any]) -> float | None:
    """The importance a failure's severity or a progress note's status implies, if any."""
    if memory_type is MemoryType.FAILURE:
        return SEVERITY_IMPORTANCE.get(str(details.get("severity")))
    if memory_type is MemoryType.PROGRESS:
        return STATUS_IMPORTANCE.get(str(details.get("status")))
    return None


_NON_BLANK: dict[str, Any] = {"type": "string", "pattern": "\\S"}
_FIELD_SCHEMAS: Mapping[str, dict[str, Any]] = {
    "severity": {"enum": list(SEVERITY_IMPORTANCE)},
    "status": {"enum": list(STATUS_IMPORTANCE)},
    "completion": {"type": "number", "minimum": 0, "maximum": 100},
    "related_test_ids": {"type": "array", "items": _NON_BLANK},
    **{name: {"type": "array", "items": _NON_BLANK} for name in _LISTS},
}


def details_json_schema() -> list[dict[str, Any]]:
    """The same rules as JSON Schema ``if``/``then`` clauses of a memory, so that the OpenAPI and
    MCP schemas state them (a client generating requests from the schema meets them)."""
    clauses = []
    for memory_type, (required, optional) in _SHAPES.items():
        properties = {name: _FIELD_SCHEMAS.get(name, _NON_BLANK) for name in (*required, *optional)}
        clauses.append(
            {
                "if": {"properties": {"memory_type": {"const": memory_type.value}}, "required": ["memory_type"]},
                "then": {
                    "required": ["details"],
                    "properties": {
                        "details": {
                            "type": "object",
                            "properties": properties,
                            "required": list(required),
                            "additionalProperties": False,
                        }
                    },
                },
            }
        )
    return clauses


def handoff_content(details: Mapping[str, Any]) -> str:
    """A handoff's details as the text a later session reads (and recall searches)."""
    parts = [str(details["summary"]).strip()]
    for name, heading in (
        ("completed", "Completed"),
        ("in_progress", "In progress"),
        ("blocked", "Blocked"),
        ("next_steps", "Next steps"),
    ):
        items = details.get(name) or []
        if items:
            parts.append(f"{heading}:\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)
