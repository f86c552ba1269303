"""Consolidation: many memories become one parent that holds what they found; the sources stay.

Two ways in. A goal closed by a note: the note (a memory with a ``closes`` edge to the goal)
becomes the parent of the findings linked to the goal by ``achieves``. Sleep: a cluster of
near-identical recent ``working`` memories becomes one new ``insight`` built from their text.
Either way the sources move to ``consolidated`` with their importance × 0.2 (muted: still
recalled, ranked low), the parent gets a ``derived_from`` edge to each, and one audit record
keeps the sources as they were, so the consolidation can be undone. Nothing is deleted.

Pure: the caller reads the memories and applies the plan (``workers.lifecycle``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from hivemem.hashing import content_hash
from hivemem.model import AuditEvent, Memory, MemoryState, MemoryType, Relation, RelationType, Source
from hivemem.resolution import snapshot

__all__ = [
    "PARENT_BOOST",
    "SOURCE_IMPORTANCE_FACTOR",
    "Consolidation",
    "clusters",
    "consolidate",
    "insight_from",
    "parent_importance",
]

SOURCE_IMPORTANCE_FACTOR = 0.2
PARENT_BOOST = 1.1
_INSIGHT_MAX_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Consolidation:
    """What consolidating ``sources`` under ``parent`` writes: the parent, the muted sources,
    the ``derived_from`` edges and the audit record (``consolidate``)."""

    parent: Memory
    sources: tuple[Memory, ...]
    relations: tuple[Relation, ...]
    audit: AuditEvent

    @property
    def writes(self) -> tuple[Memory, ...]:
        """Every memory to write, sources first: a pass cut short leaves no parent without its sources."""
        return (*self.sources, self.parent)


def parent_importance(parent: Memory, sources: Sequence[Memory]) -> float:
    """``min(1, max(sources) × 1.1)``, and never below what the parent had."""
    return round(max(parent.importance, min(1.0, max(s.importance for s in sources) * PARENT_BOOST)), 6)


def consolidate(
    parent: Memory, sources: Sequence[Memory], now: datetime, *, author: str, reason: str, created: bool = False
) -> Consolidation:
    """Consolidate ``sources`` (not yet consolidated, none of them ``parent``) under ``parent``.

    ``created``: the parent is new (sleep); undoing archives it instead of restoring it.
    """
    if not sources:
        raise ValueError("nothing to consolidate")
    if any(s.id == parent.id for s in sources):
        raise ValueError("a memory cannot be consolidated under itself")
    muted = tuple(
        replace(
            s,
            state=MemoryState.CONSOLIDATED,
            importance=round(s.importance * SOURCE_IMPORTANCE_FACTOR, 6),
            updated_at=now,
        )
        for s in sources
    )
    lifted = replace(parent, importance=parent_importance(parent, sources), updated_at=now)
    edges = tuple(Relation(parent.id, s.id, RelationType.DERIVED_FROM, 1.0, author, now) for s in sources)
    record = AuditEvent(
        "consolidate",
        parent.id,
        parent.scope,
        author,
        {
            "reason": reason,
            "created_parent": created,
            "parent_before": snapshot(parent),
            "sources": [snapshot(s) for s in sources],
        },
        now,
    )
    return Consolidation(lifted, muted, edges, record)


def insight_from(sources: Sequence[Memory], *, memory_id: str, now: datetime, author: str) -> Memory:
    """The memory a sleep cluster becomes: titled after its most important source, holding each
    distinct statement of the sources once (no model needed), tagged with all their tags."""
    ranked = sorted(sources, key=lambda m: (-m.importance, m.created_at))
    seen: set[str] = set()
    lines: list[str] = []
    for memory in ranked:
        for sentence in _statements(memory.content):
            key = " ".join(sentence.casefold().split())
            if key not in seen:
                seen.add(key)
                lines.append(f"- {sentence}")
    content = f"Consolidated from {len(sources)} memories:\n" + "\n".join(lines)
    if len(content) > _INSIGHT_MAX_CHARS:
        content = content[: _INSIGHT_MAX_CHARS - 1].rstrip() + "…"
    lead = ranked[0]
    tags = sorted({t for m in sources for t in m.tags})
    files = list(dict.fromkeys(f for m in ranked for f in m.related_files))
    return Memory(
        id=memory_id,
        scope=lead.scope,
        title=lead.title,
        content=content,
        content_hash=content_hash(content),
        memory_type=MemoryType.INSIGHT,
        importance=lead.importance,
        source=Source.USER_CONFIRMED if any(m.source is Source.USER_CONFIRMED for m in sources) else lead.source,
        tags=tags,
        related_files=files,
        author=author,
        created_at=now,
        updated_at=now,
    )


def _statements(text: str) -> list[str]:
    parts = [p.strip() for chunk in text.splitlines() for p in chunk.replace("; ", ". ").split(". ")]
    return [p.rstrip(".") + "." for p in parts if p.strip(" .-")]


def clusters(
    candidates: Sequence[Memory], near: Mapping[str, Sequence[tuple[str, float]]], *, threshold: float, min_size: int
) -> list[list[Memory]]:
    """Groups of at least ``min_size`` candidates, each member within ``threshold`` cosine of its
    group's seed (no chaining: A~B and B~C do not put A with C).

    ``near[id]`` lists ``(other id, cosine)`` for a candidate's nearest neighbours. Seeds are taken
    most important first, then oldest; a memory joins at most one group.
    """
    by_id = {m.id: m for m in candidates}
    taken: set[str] = set()
    groups: list[list[Memory]] = []
    for seed in sorted(candidates, key=lambda m: (-m.importance, m.created_at, m.id)):
        if seed.id in taken:
            continue
        members = [seed] + [
            by_id[other]
            for other, cosine in near.get(seed.id, ())
            if cosine >= threshold and other != seed.id and other in by_id and other not in taken
        ]
        unique = list({m.id: m for m in members}.values())
        if len(unique) >= min_size:
            groups.append(unique)
            taken.update(m.id for m in unique)
    return groups
