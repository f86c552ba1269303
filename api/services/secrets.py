"""The secret policy of a write: find credentials in what it would store, then refuse the write or
store it with each one replaced by ``[REDACTED:kind]`` (:mod:`hivemem.secret_scan` finds them).

Every write path takes its text through here before anything is stored: memorize (one, bulk,
imports), edits, handoffs and ``knowledge store``. A refusal names the field, the kind and the
characters, never the value, so that no answer, log line, audit record or metric can repeat it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from hivemem.answers import MemorizeResult, Redaction
from hivemem.errors import SecretRefused
from hivemem.schemas import MemoryCreate
from hivemem.secret_scan import find_secrets, redact

__all__ = ["HANDOFF_FIELDS", "MEMORY_FIELDS", "SecretPolicy", "SecretScreen", "noted", "screened"]

SecretPolicy = Literal["refuse", "redact"]
MEMORY_FIELDS = ("title", "content", "tags", "details")
"""The texts of a memory a credential could hide in (ids, scopes and file paths are checked as such)."""
HANDOFF_FIELDS = ("summary", "completed", "in_progress", "blocked", "next_steps")
M = TypeVar("M", bound=BaseModel)


class SecretScreen:
    """Credentials in a write's text, under one policy (the ``secret_policy`` setting)."""

    def __init__(self, policy: SecretPolicy) -> None:
        self.policy = policy

    def text(self, value: str, field: str) -> tuple[str, list[Redaction]]:
        """``value`` as it may be stored, and what was replaced; ``SecretRefused`` under ``refuse``."""
        findings = find_secrets(value)
        if not findings:
            return value, []
        if self.policy == "refuse":
            first = findings[0]
            raise SecretRefused(
                f"{field} holds what looks like a credential ({first.kind}, characters {first.start}-{first.end}"
                f"{'' if len(findings) == 1 else f', and {len(findings) - 1} more'}). hivemem does not store "
                "secrets: every teammate's agent, export and backup would hold it. Remove it, or name where it "
                "is kept instead (a vault path, an environment variable).",
                field=field,
                kind=first.kind,
            )
        return redact(value, findings), [Redaction(field=field, kind=f.kind) for f in findings]

    def value(self, value: Any, field: str) -> tuple[Any, list[Redaction]]:
        """Every text in ``value`` (a string, or lists and objects of them), screened."""
        if isinstance(value, str):
            return self.text(value, field)
        found: list[Redaction] = []
        if isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                screened, seen = self.value(item, f"{field}[{i}]")
                items.append(screened)
                found += seen
            return (items if found else value), found
        if isinstance(value, dict):
            entries = {}
            for key, item in value.items():
                screened, seen = self.value(item, f"{field}.{key}")
                entries[key] = screened
                found += seen
            return (entries if found else value), found
        return value, found

    def model(self, model: M, fields: Sequence[str], *, prefix: str = "") -> tuple[M, list[Redaction]]:
        """``model`` with its ``fields`` screened (a copy where something was replaced), and what was."""
        updates: dict[str, Any] = {}
        found: list[Redaction] = []
        for name in fields:
            screened, seen = self.value(getattr(model, name), f"{prefix}{name}")
            if seen:
                updates[name] = screened
                found += seen
        return (model.model_copy(update=updates) if updates else model), found


def screened(
    screen: SecretScreen, requests: list[MemoryCreate], prefix: str
) -> tuple[list[MemoryCreate], list[list[Redaction]]]:
    """The memories as they may be stored (``SecretRefused``, naming the first, before anything is
    written), and each one's credentials replaced; ``prefix`` names an item (``memories[{i}].``)."""
    done = [screen.model(r, MEMORY_FIELDS, prefix=prefix.format(i=i)) for i, r in enumerate(requests)]
    return [request for request, _ in done], [found for _, found in done]


def noted(results: list[MemorizeResult], redacted: list[list[Redaction]]) -> list[MemorizeResult]:
    """Each result with the credentials its memory's text lost."""
    return [r.model_copy(update={"redacted": found or None}) for r, found in zip(results, redacted, strict=True)]
