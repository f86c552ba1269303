"""The edges a new memory asks for (``related_to``), checked before anything is written: each
target readable from the memory's scope, and each edge that rewrites its target (``supersedes``,
``closes`` on a goal) allowed only to a caller who may change what it rewrites."""

from __future__ import annotations

from api.services.caller import Caller
from hivemem.errors import MemoryNotFoundError
from hivemem.model import Link, Memory, MemoryState, MemoryType, RelationType
from hivemem.schemas import MemoryCreate
from search import Store

__all__ = ["checked_links"]


def checked_links(store: Store, request: MemoryCreate, scope: str, caller: Caller) -> tuple[Link, ...]:
    """The edges ``request`` asks for, each to a memory readable from ``scope``; else a
    ``MemoryNotFoundError`` naming the first that is not, before anything is written."""
    if not request.related_to:
        return ()
    readable = caller.readable(scope)
    found = {m.id: m for m in store.get_many([k.target_id for k in request.related_to], vectors=False)}
    for i, asked in enumerate(request.related_to):
        target = found.get(asked.target_id)
        # A memory of a scope the caller cannot read gets the same answer as none: its id says nothing.
        if target is None or target.scope not in readable:
            raise MemoryNotFoundError(
                f"related_to[{i}].target_id: no memory with id {asked.target_id} in scope {scope} or global"
            )
    for i, asked in enumerate(request.related_to):
        _check_edge_effect(store, f"related_to[{i}]", asked.link().type, found[asked.target_id], caller)
    return tuple(dict.fromkeys(k.link() for k in request.related_to))


def _check_edge_effect(store: Store, where: str, kind: RelationType, target: Memory, caller: Caller) -> None:
    """Refuse an edge whose effect rewrites what the caller may not change: ``supersedes`` ends
    the target's validity, ``closes`` on a goal consolidates the goal's working findings. Each
    takes what an edit of those memories takes (write for the caller's own, admin for others').
    Any other edge only links, and reading the target is enough."""
    if kind is RelationType.SUPERSEDES:
        caller.require_changing(target, f"supersede memory {target.id} ({where}; it would no longer be valid)")
    elif kind is RelationType.CLOSES and target.memory_type is MemoryType.GOAL:
        doing = f"close goal {target.id} ({where}; its findings would be consolidated)"
        caller.require_changing(target, doing)
        edges = store.relations(target.id)
        findings = [r.source_id for r in edges if r.type is RelationType.ACHIEVES and r.target_id == target.id]
        for finding in store.get_many(findings, vectors=False):
            if finding.state is MemoryState.WORKING and finding.scope == target.scope:
                caller.require_changing(finding, doing)
