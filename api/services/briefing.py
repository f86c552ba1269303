"""A session's briefing: what an agent starting work in a scope should know before its first prompt.

The latest handoff, the open failures, the features not done, and the few most important decisions,
preferences and strategies of the scope, rendered as one short text (``Briefing.text``) that a
client hook injects into the session. Its size is bounded, since it is read into every session.
"""

from __future__ import annotations

from datetime import datetime

from api.services.caller import Caller
from api.services.handoffs import latest_handoff
from api.services.status import unfinished_features
from hivemem.answers import Briefing, BriefingItem, HandoffPublic, trust_label
from hivemem.errors import PermissionDeniedError
from hivemem.model import GLOBAL_SCOPE, Memory, MemoryState, MemoryType
from search import SearchFilter, Store

__all__ = ["KEY_TYPES", "briefing"]

KEY_TYPES = (MemoryType.DECISION, MemoryType.PREFERENCE, MemoryType.ARCHITECTURE, MemoryType.STRATEGY)
"""What a team settled and what it prefers: the memories a new session should not contradict."""

# How much of the scope a briefing reads and shows. About 1,500 tokens in all: 6,000 characters.
_MAX_CHARS = 6000
_KEY_SCAN = 200  # the newest key memories ranked by importance
# A team's first year holds a few dozen: show them all while they fit ("Deploys go through staging"
# was the 7th of 8 decisions and left out), most important first, within the size bound.
_KEY_SHOWN = 15
_TEAM_WIDE_SHOWN = 5  # the global scope's, in a project's briefing
_FAILURES_SHOWN = 5
_FEATURES_SHOWN = 5
_FEATURES_SCAN = 200  # the newest progress notes it reads
_LINE_CHARS = 240
_HANDOFF_CHARS = 1200


def briefing(store: Store, caller: Caller, scope: str | None, *, now: datetime) -> Briefing:
    """The briefing of the caller's scope (or ``scope``); 403 without read there."""
    name = caller.scope_for(scope, write=False)
    handoff = latest_handoff(store, caller, name)
    failures = store.list_memories(
        SearchFilter(scopes=[name], states=(MemoryState.WORKING,), memory_types=(MemoryType.FAILURE,)),
        _FAILURES_SHOWN,
        vectors=False,
    )
    features = unfinished_features(store, name, _FEATURES_SCAN)[:_FEATURES_SHOWN]
    current = _key_memories(store, name, now)
    # A user's preferences live in the global scope, and a project's session keeps to them too.
    team_wide = _key_memories(store, GLOBAL_SCOPE, now) if name != GLOBAL_SCOPE and _reads_global(caller) else []
    answer = Briefing(
        scope=name,
        handoff=handoff,
        open_failures=[_item(m) for m in failures],
        unfinished=features,
        key_memories=[_item(m) for m in current[:_KEY_SHOWN]],
        team_wide=[_item(m) for m in team_wide[:_TEAM_WIDE_SHOWN]],
        text="",
    )
    return answer.model_copy(update={"text": render(answer)})


def _key_memories(store: Store, scope: str, now: datetime) -> list[Memory]:
    """The scope's current key memories, most important first, then newest."""
    keys = store.list_memories(
        SearchFilter(scopes=[scope], states=(MemoryState.WORKING,), memory_types=KEY_TYPES), _KEY_SCAN, vectors=False
    )
    current = [m for m in keys if not m.superseded_at(now)]
    current.sort(key=lambda m: (-m.importance, -m.created_at.timestamp()))
    return current


def _reads_global(caller: Caller) -> bool:
    try:
        caller.scope_for(GLOBAL_SCOPE, write=False)
    except PermissionDeniedError:
        return False
    return True


def _item(memory: Memory) -> BriefingItem:
    return BriefingItem(
        id=memory.id,
        title=memory.title,
        memory_type=memory.memory_type,
        label=trust_label(memory.source),
        created_at=memory.created_at,
    )


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _handoff_lines(handoff: HandoffPublic) -> list[str]:
    lines = [f"Latest handoff ({handoff.created_at:%Y-%m-%d %H:%M} UTC, by {handoff.author}):"]
    lines.append("  " + _cut(handoff.summary, _HANDOFF_CHARS))
    for label, items in (
        ("In progress", handoff.in_progress),
        ("Blocked", handoff.blocked),
        ("Next", handoff.next_steps),
    ):
        if items:
            lines.append(f"  {label}: " + _cut("; ".join(items), _LINE_CHARS * 2))
    return lines


def render(answer: Briefing) -> str:
    """The briefing as the text a session reads, at most about 1,500 tokens."""
    where = "the global scope" if not answer.scope else f"scope {answer.scope}"
    lines = [f"hivemem briefing for {where}."]
    if answer.handoff is not None:
        lines += _handoff_lines(answer.handoff)
    if answer.open_failures:
        lines.append("Open failures:")
        lines += [f"- {_cut(f.title, _LINE_CHARS)} (id {f.id})" for f in answer.open_failures]
    if answer.unfinished:
        lines.append("Unfinished features:")
        for f in answer.unfinished:
            done = "" if f.completion is None else f", {float(f.completion):g}% done"
            blocked = "" if not f.blockers else "; blocked by " + "; ".join(f.blockers)
            lines.append("- " + _cut(f"{f.feature}: {f.status}{done}{blocked}", _LINE_CHARS))
    if answer.key_memories:
        lines.append("Decisions and preferences to keep to:")
        lines += [
            f"- {m.label} {m.memory_type.value}: {_cut(m.title, _LINE_CHARS)} (id {m.id})" for m in answer.key_memories
        ]
    if answer.team_wide:
        lines.append("Team-wide (global scope):")
        lines += [
            f"- {m.label} {m.memory_type.value}: {_cut(m.title, _LINE_CHARS)} (id {m.id})" for m in answer.team_wide
        ]
    if len(lines) == 1:
        lines.append("Nothing is stored for this project yet.")
    lines.append(
        "Recall more with the `remember` tool before deciding; `memorize` decisions with their reasons; "
        "save a `handoff` before you stop."
    )
    text = "\n".join(lines)
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 1] + "…"
