"""The MCP server's instructions, per session: what hivemem is, and which scopes this session reads.

An agent reads them into every session's context, so they stay short: the session's scope, then
the other scopes the caller may read with their memory counts, the largest first, at most a few,
saying how many are left out.
"""

from __future__ import annotations

from collections.abc import Mapping

from hivemem.model import GLOBAL_SCOPE

__all__ = ["INSTRUCTIONS", "session_instructions"]

INSTRUCTIONS = (
    "hivemem is this team's long-term memory. Call `remember` before you decide, design, debug or "
    "ask the user something they may already have told someone; call `memorize` when you learn "
    "something worth knowing next time (a decision and its reason, a fix and its root cause, a "
    "preference, a convention). Memories are scoped per project and global ones are shared; each "
    "tool's description says which project this session works in."
)
_SCOPES_SHOWN = 6


def _named(scope: str, counts: Mapping[str, int]) -> str:
    count = counts.get(scope, 0)
    return f"`{scope or 'global'}` ({count:,} {'memory' if count == 1 else 'memories'})"


def session_instructions(scope: str | None, counts: Mapping[str, int]) -> str:
    """The instructions for a session working in ``scope`` (None: it names none), where the caller
    may read the scopes of ``counts`` (scope -> memories)."""
    lines = [INSTRUCTIONS]
    if scope is not None:
        lines.append(f"This session works in {_named(scope, counts)}.")
    others = sorted((s for s in counts if s != scope), key=lambda s: (s != GLOBAL_SCOPE, -counts[s], s))
    if others:
        shown = ", ".join(_named(s, counts) for s in others[:_SCOPES_SHOWN])
        more = len(others) - _SCOPES_SHOWN
        left = f", and {more} more" if more > 0 else ""
        lines.append(f"Other scopes you may read (pass `scope` to `remember`): {shown}{left}.")
    return " ".join(lines)
