"""What each client event injects. A handler takes the client's JSON and the server, and answers the
JSON the client reads on stdout, or None for nothing at all.

- ``session-start``: the scope's briefing (``GET /v1/briefing``: latest handoff, open failures,
  unfinished features, key decisions and preferences, at most about 1,500 tokens). After a
  compaction, with no handoff saved since the session began, it adds a reminder to save one.
- ``prompt-submit``: the prompt's best few memories, each with its id and trust label, only those
  whose meaning is close to the prompt's (the dense leg's cosine at least ``min_similarity``). A
  prompt that matches nothing gets nothing: a hook that pastes noise into every prompt is worse
  than none.
- ``stop``: once a session, when it did real work (``_WORK_TOOL_CALLS`` tool calls in its
  transcript) and saved no handoff since it began, the agent is asked to save one before it
  stops. Never twice, and never while the client is already continuing because of a stop hook.

A recall writes nothing (hivemem reinforces a memory only when it is used), and no handler writes a
memory: what is saved is what the agent chooses to save.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from api.hooks.session_log import SessionState
from api.remote import Remote

__all__ = ["COMPACTED_REMINDER", "EVENTS", "HANDOFF_REMINDER", "HookContext", "prompt_submit", "session_start", "stop"]

MIN_SIMILARITY = 0.35
"""The cosine between prompt and memory (all-MiniLM-L6-v2) under which a memory is not injected: on
that model unrelated sentences score mostly below 0.2, and a memory that answers a question mostly
above 0.4. The server names its own model's (``knn_related_from``); this one stands in for a server
that does not."""
_PROMPT_RESULTS = 3
_PROMPT_MIN_WORDS = 3  # "yes", "go on", "/compact": nothing to look up
_SNIPPET_CHARS = 300
_QUERY_CHARS = 2000  # the longest query a recall takes
_WORK_TOOL_CALLS = 10
_TRANSCRIPT_TAIL_BYTES = 4 * 1024 * 1024
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_HANDOFF = (
    "with the `handoff` tool (summary, completed, in progress, blocked, next steps), so that the next "
    "session can pick up from here."
)
HANDOFF_REMINDER = f"hivemem: no handoff was saved in this session. Before you stop, save one {_HANDOFF}"
COMPACTED_REMINDER = (
    f"hivemem: the context was just compacted and no handoff was saved in this session: save one {_HANDOFF}"
)


@dataclass(frozen=True)
class HookContext:
    """One hook call: the client's JSON, the server, the scope it works in, and its options."""

    payload: Mapping[str, Any]
    remote: Remote
    scope: str | None
    min_similarity: float | None = None

    @property
    def session_id(self) -> str:
        value = self.payload.get("session_id")
        return value if isinstance(value, str) else ""


def _context(event_name: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def _saved_since(handoff: Mapping[str, Any] | None, started_at: float) -> bool:
    if not handoff:
        return False
    try:
        return datetime.fromisoformat(str(handoff["created_at"])).timestamp() >= started_at
    except (KeyError, ValueError):
        return False


def session_start(ctx: HookContext) -> dict[str, Any] | None:
    """The scope's briefing; after a compaction, the reminder to save a handoff when none was."""
    state = SessionState.begin(ctx.session_id) if ctx.session_id else None
    answer = ctx.remote.briefing(ctx.scope)
    text = str(answer.get("text", ""))
    compacted = ctx.payload.get("source") == "compact"
    if compacted and state is not None and not _saved_since(answer.get("handoff"), state.started_at):
        text += "\n" + COMPACTED_REMINDER
    return _context("SessionStart", text) if text else None


def _query(prompt: object) -> str | None:
    if not isinstance(prompt, str):
        return None
    text = _CONTROL.sub(" ", prompt).strip()
    if text.startswith("/") or len(text.split()) < _PROMPT_MIN_WORDS:
        return None
    return text[:_QUERY_CHARS]


def _line(result: Mapping[str, Any]) -> str:
    content = " ".join(str(result.get("content", "")).split())
    if len(content) > _SNIPPET_CHARS:
        content = content[: _SNIPPET_CHARS - 1].rstrip() + "…"
    return (
        f"- {result.get('label', '')} {result.get('memory_type', '')}: {result.get('title', '')} "
        f"(id {result.get('id', '')}): {content}"
    )


def prompt_submit(ctx: HookContext) -> dict[str, Any] | None:
    """The prompt's memories above the similarity floor, or None when none is close enough."""
    query = _query(ctx.payload.get("prompt"))
    if query is None:
        return None
    body: dict[str, Any] = {"query": query, "limit": _PROMPT_RESULTS, "explain": True, "graph_hops": 0}
    if ctx.scope is not None:
        body["scope"] = ctx.scope
    answer = ctx.remote.remember(body)
    # The server's model's own floor unless one was given (a server of before it says none: MiniLM's).
    floor = ctx.min_similarity if ctx.min_similarity is not None else answer.get("knn_related_from") or MIN_SIMILARITY
    results = answer.get("results", [])
    close = [r for r in results if ((r.get("explain") or {}).get("knn_score") or 0.0) >= floor]
    if not close:
        return None
    lines = ["hivemem: stored memories that bear on this prompt ([INFERRED] ones are worth checking):"]
    lines += [_line(r) for r in close]
    lines.append("`remember` finds more; `memory` with action `get` and an id reads one whole.")
    return _context("UserPromptSubmit", "\n".join(lines))


def _did_work(transcript_path: object) -> bool:
    """Whether the session's transcript (its newest few MB) shows ``_WORK_TOOL_CALLS`` tool calls."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return False
    try:
        with Path(transcript_path).open("rb") as transcript:
            transcript.seek(0, 2)
            transcript.seek(max(0, transcript.tell() - _TRANSCRIPT_TAIL_BYTES))
            tail = transcript.read()
    except OSError:
        return False
    return len(re.findall(rb'"type"\s*:\s*"tool_use"', tail)) >= _WORK_TOOL_CALLS


def stop(ctx: HookContext) -> dict[str, Any] | None:
    """Once a session that did work and saved no handoff: ask the agent to save one before stopping."""
    if ctx.payload.get("stop_hook_active") or not ctx.session_id:
        return None
    state = SessionState.load(ctx.session_id)
    if state is None or state.reminded or not _did_work(ctx.payload.get("transcript_path")):
        return None
    if _saved_since(ctx.remote.handoff(ctx.scope), state.started_at):
        return None
    state.reminded = True
    state.save(ctx.session_id)
    return {"decision": "block", "reason": HANDOFF_REMINDER}


EVENTS: dict[str, Callable[[HookContext], dict[str, Any] | None]] = {
    "session-start": session_start,
    "prompt-submit": prompt_submit,
    "stop": stop,
}
"""Each event's handler, under the name ``hivemem hook`` takes."""
