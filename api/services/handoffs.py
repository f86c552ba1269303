"""A session handoff as a memory: the ``handoff`` memory a save writes, and the latest one of a scope."""

from __future__ import annotations

from api.services.caller import Caller
from hivemem.answers import HandoffPublic
from hivemem.engineering import handoff_content
from hivemem.errors import ValidationError
from hivemem.model import MemoryType, Source
from hivemem.schemas import MAX_CONTENT_CHARS, HandoffSave, MemoryCreate
from search import SearchFilter, Store

__all__ = ["handoff_memory", "latest_handoff"]


def handoff_memory(request: HandoffSave) -> MemoryCreate:
    """The ``handoff`` memory a save writes. Raises ``ValidationError`` when its text would not fit one."""
    details = request.details()
    content = handoff_content(details)
    if len(content) > MAX_CONTENT_CHARS:
        raise ValidationError(
            f"the handoff reads {len(content)} characters as a memory; at most {MAX_CONTENT_CHARS} fit",
            field="summary",
        )
    first_line = request.summary.splitlines()[0].strip()
    title = f"Handoff: {first_line}"
    title = title if len(title) <= 200 else title[:199].rstrip() + "…"
    # Built, not validated again: HandoffSave bounded every field, and its details are a
    # handoff's shape by construction (they may pass the size cap of caller-written details).
    memory = MemoryCreate.model_construct(
        title=title,
        content=content,
        scope=request.scope,
        memory_type=MemoryType.HANDOFF,
        importance=0.6,
        source=Source.AGENT_INFERRED,
        tags=[],
        related_files=[],
        details=details,
        related_to=[],
    )
    return memory


def latest_handoff(store: Store, caller: Caller, scope: str | None) -> HandoffPublic | None:
    """The latest handoff of the caller's scope (or ``scope``), or None."""
    where = SearchFilter(scopes=[caller.scope_for(scope, write=False)], memory_types=(MemoryType.HANDOFF,))
    latest = store.list_memories(where, 1, vectors=False)
    return HandoffPublic.of(latest[0]) if latest else None
