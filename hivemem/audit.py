"""The audit log as callers read it: which records a query selects, and what of a record is shown.

The store keeps what undo needs (a merge or supersede record holds the memory as it was). The log
that people read never shows memory content or secrets: :func:`public_detail` keeps ids, counts,
reasons and hashes, and turns every snapshot of a memory into its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

__all__ = ["AUDITED_ACTIONS", "DENIED", "MAX_AUDIT_LIMIT", "AuditAction", "AuditQuery", "public_detail"]

# The most records one query reads.
MAX_AUDIT_LIMIT = 1000

# A request refused for want of a grant (403) or of a valid token (401).
DENIED = "denied"

# Every action the log records.
AuditAction = Literal[
    "forget",
    "update",
    "verify",
    "merge",
    "reinforce",
    "supersede",
    "undo",
    "consolidate",
    "promote",
    "token_create",
    "token_revoke",
    "import",
    "reembed",
    "denied",
]
AUDITED_ACTIONS: tuple[str, ...] = get_args(AuditAction)

# Keys whose values are memory text: never shown in the readable log.
_CONTENT_KEYS = frozenset({"title", "content", "details", "tags", "related_files"})


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which audit records to read, newest first. Every field narrows; None or empty means any.

    ``scopes`` None reads the whole log (an admin's view); a sequence reads only records of those
    scopes (a caller's readable scopes).
    """

    memory_id: str | None = None
    actions: Sequence[str] = ()
    author: str | None = None
    scopes: Sequence[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 100

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("AuditQuery.limit must be at least 1")
        if self.scopes is not None and not self.scopes:
            raise ValueError("AuditQuery.scopes, when given, must name at least one scope")


def _is_snapshot(value: dict[str, Any]) -> bool:
    return "id" in value and "content" in value


def _shown(value: Any) -> Any:
    if isinstance(value, dict):
        if _is_snapshot(value):
            return {"id": value["id"]}
        return {k: _shown(v) for k, v in value.items() if k not in _CONTENT_KEYS}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def public_detail(detail: dict[str, Any]) -> dict[str, Any]:
    """``detail`` without memory text: each snapshot of a memory becomes ``{"id": …}``, and titles,
    contents, tags and details are dropped wherever they appear."""
    shown: dict[str, Any] = _shown(detail)
    return shown
