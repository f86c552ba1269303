"""Undoing a merge, a supersede or a consolidation from its audit record.

Each merge, reinforcement by meaning and supersede writes an audit record holding the memory as it
was (and, for a fold, the memory folded in). Undo puts them back: a superseded memory is valid again
and loses the ``supersedes`` edge; a merged or reinforced memory gets its own text back and the
folded-in memory is stored on its own, under the id it was given. Restored texts are embedded
again. A consolidation's sources get their state and importance back and lose their
``derived_from`` edges; a parent it made (a sleep insight) is archived, one it lifted (a goal's
closing note) gets its importance back. A memory taken back out of the archive counts as used at
that moment, so that it fades again from there instead of going straight back at the next sleep.
The undo is itself audited, and an audit record can be undone once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from hivemem.embedding import Embedder
from hivemem.errors import UndoRefused
from hivemem.model import AuditEvent, DuplicatePolicy, MemoryState, Relation, RelationType, utcnow
from hivemem.resolution import restored, unmerged
from search.base import Store
from workers.jobs import embedded

__all__ = ["UNDOABLE", "changed_scopes", "undo"]

UNDOABLE = ("merge", "reinforce", "supersede", "consolidate", "archive")


def undo(store: Store, embedder: Embedder, event: AuditEvent, author: str) -> list[str]:
    """Undo the merge or supersede that ``event`` records; the ids of the memories put back.

    Raises ``UndoRefused`` for a record of another action or one already undone.
    """
    if event.action not in UNDOABLE:
        raise UndoRefused(
            f"audit record {event.id} records a {event.action}: only a merge, a reinforcement by meaning, a "
            "supersede, a consolidation or an archiving can be undone"
        )
    if any(e.action == "undo" and e.detail.get("undid") == event.id for e in store.audit_log(event.memory_id)):
        raise UndoRefused(f"audit record {event.id} was already undone")
    now = utcnow()
    detail = event.detail
    if event.action == "consolidate":
        ids = _unconsolidate(store, event, now)
    elif event.action == "archive":
        # Taken back out by someone: counted as used now, or the next sleep would archive it again
        # at once (nothing else about it changed) and the undo would last a day.
        back = replace(restored(store.get(event.memory_id), detail["before"], now), last_accessed_at=now)
        store.put(back, DuplicatePolicy.UPDATE)
        ids = [event.memory_id]
    elif event.action == "supersede":
        old = store.get(str(detail["superseded"]))
        store.put(restored(old, detail["before"], now), DuplicatePolicy.UPDATE)
        store.remove_relation(Relation(event.memory_id, old.id, RelationType.SUPERSEDES))
        ids = [old.id]
    else:  # a merge, or a reinforcement by meaning: the memory as it was, and the one folded in
        merged = store.get(event.memory_id)
        # Both texts in one embedder call.
        back, separate = embedded(
            embedder, [restored(merged, detail["before"], now), unmerged(detail["incoming"], event.scope, now)]
        )
        store.put(back, DuplicatePolicy.UPDATE)
        store.put(separate, DuplicatePolicy.OVERWRITE)
        ids = [merged.id, separate.id]
    store.audit(
        AuditEvent(
            "undo",
            event.memory_id,
            event.scope,
            author,
            {"undid": event.id, "action": event.action, "restored": ids},
            now,
        )
    )
    return ids


def changed_scopes(store: Store, event: AuditEvent) -> set[str]:
    """The scopes of the memories that undoing ``event`` would change (those still held): the
    record's own scope, or across an edge the global scope (a project's note superseding a global
    fact, a global goal's findings in a project). Undo takes admin on each."""
    detail = event.detail
    if event.action == "supersede":
        ids = [str(detail["superseded"])]
    elif event.action == "consolidate":
        ids = [event.memory_id, *(str(before["id"]) for before in detail["sources"])]
    else:  # a merge or reinforcement (the folded-in memory comes back in the record's scope), an archiving
        ids = [event.memory_id]
    return {event.scope} | {memory.scope for memory in store.get_many(ids, vectors=False)}


def _unconsolidate(store: Store, event: AuditEvent, now: datetime) -> list[str]:
    detail = event.detail
    parent = store.get(event.memory_id)
    # One read for every source; one forgotten since has nothing to put back.
    current = {m.id: m for m in store.get_many([str(before["id"]) for before in detail["sources"]])}
    ids = []
    for before in detail["sources"]:
        source = current.get(str(before["id"]))
        if source is None:
            continue
        store.put(restored(source, before, now), DuplicatePolicy.UPDATE)
        store.remove_relation(Relation(parent.id, source.id, RelationType.DERIVED_FROM))
        ids.append(source.id)
    if detail.get("created_parent"):
        store.put(replace(parent, state=MemoryState.ARCHIVED, updated_at=now), DuplicatePolicy.UPDATE)
    else:
        store.put(restored(parent, detail["parent_before"], now), DuplicatePolicy.UPDATE)
    return [*ids, parent.id]
