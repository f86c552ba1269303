"""Write-time resolution: what memorize does with a new memory given what the scope holds.

The whole dedup and contradiction policy is here, pure; a store hands it the incoming memory, the
memory holding the same content hash (if any) and the nearest memories of the scope with their
cosines, and applies the :class:`Resolution` it returns as one unit. The thresholds are Engram's
(MiniLM's cosines; each model reads its own bands, :mod:`hivemem.cosine_bands`);
unlike Engram, a contradiction is looked for above the reinforce threshold too:

- the same content hash: **reinforce** the memory that holds it;
- cosine ≥ ``contradiction_at`` (0.60): the same subject. The contradiction check
  (:mod:`hivemem.contradiction`) reads both: a contradiction **supersedes** the old memory (the
  new one is stored with a ``supersedes`` link; the old one stays, marked no longer valid, so
  recall ranks it down), however close the two vectors are (a changed value or a negation barely
  moves them);
- otherwise, cosine ≥ ``reinforce_at`` (0.85): the same fact in other words, **reinforce** it; a
  user's confirmation brings its own wording along;
- otherwise, between the two: a compatible fact that says what the old one says
  (:func:`hivemem.contradiction.restates`) is **merged** into it, its text kept word for word,
  when their titles name one subject (:func:`hivemem.contradiction.titles_apart`); one with words
  of its own is stored and linked;
- below ``contradiction_at`` but at least ``named_change_at`` (0.40): a write that names a change
  whose old side a neighbour states ("we moved from Postgres 14 to 16") **supersedes** it;
- anything else is **stored**.

A memory stored new (or superseding) is linked ``similar`` to up to ``auto_links`` (5) of those
neighbours at cosine ≥ ``auto_link_at`` (0.40), the strength being the cosine: the graph recall
walks.

Only memories of the same type and subject are candidates (titles, identifiers and numbered
items tell subjects apart, see :func:`hivemem.contradiction.distinct_subjects` and
:mod:`hivemem.subjects`); a merge that would grow a memory past
``merge_max_chars`` stores instead; events (conversation turns, handoffs, progress notes) and
imported records are resolved by their exact content only (see :func:`resolves_by_meaning`).

Every merge and supersede carries an audit record with what is needed to undo it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from hivemem.contradiction import Relation as Judged
from hivemem.contradiction import (
    Verdict,
    distinct_subjects,
    distinct_values,
    judge,
    restates,
    speaks_of_change,
    titles_apart,
)
from hivemem.hashing import content_hash
from hivemem.limits import DEFAULT_LIMITS, details_problem
from hivemem.link_effects import NO_EFFECTS, LinkEffects
from hivemem.model import AuditEvent, Memory, MemoryState, MemoryType, Relation, RelationType, Source, WriteOutcome
from hivemem.reason_words import in_their_words
from hivemem.subjects import subjects_apart

__all__ = [
    "SAME_CONTENT",
    "Neighbour",
    "Resolution",
    "ResolutionPolicy",
    "merge",
    "reinforce",
    "resolve",
    "resolves_by_meaning",
    "restored",
    "snapshot",
    "superseded",
    "unmerged",
]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A memory of the incoming one's scope and its cosine to the incoming memory."""

    memory: Memory
    cosine: float


@dataclass(frozen=True, slots=True)
class ResolutionPolicy:
    """The thresholds of semantic resolution; ``neighbours`` 0 resolves exact duplicates only. The
    configured ones are the lifecycle tuning's, on the embedding model's cosine bands
    (``workers.jobs.resolution_policy``, :mod:`hivemem.cosine_bands`); these defaults are MiniLM's."""

    neighbours: int
    reinforce_at: float
    contradiction_at: float
    merge_max_chars: int = 2000
    auto_links: int = 5
    auto_link_at: float = 0.40
    named_change_at: float = 0.40

    def __post_init__(self) -> None:
        if not 0.0 <= self.contradiction_at <= self.reinforce_at <= 1.0:
            raise ValueError("need 0 <= contradiction_at <= reinforce_at <= 1")


# No neighbour is read, so no threshold is ever compared.
EXACT_ONLY = ResolutionPolicy(neighbours=0, reinforce_at=1.0, contradiction_at=1.0)
SAME_CONTENT = "same content"  # the reason of a reinforcement by exact content

# Memories that record an event keep their identity: two turns of a conversation, two handoffs or
# two progress notes that say much the same are still two. So do imported records (a document's
# abstract, an import's rows), which belong to the source they came from. Both are deduplicated
# by exact content only. Measured: resolving LoCoMo's conversation turns by meaning merged 2,020
# of 2,760 turns into 232 memories and took recall's hit@5 from 0.669 to 0.375.
_EVENTS = frozenset({MemoryType.CONVERSATION, MemoryType.HANDOFF, MemoryType.PROGRESS})


def resolves_by_meaning(memory: Memory) -> bool:
    """Whether ``memory`` is resolved against its neighbours, or by its exact content only."""
    return memory.memory_type not in _EVENTS and memory.source is not Source.IMPORTED


@dataclass(frozen=True, slots=True)
class Resolution:
    """The decision for one incoming memory, as a plan the store applies atomically.

    ``memory`` is the memory the caller hears of: the new one (stored, superseded) or the existing
    one updated (reinforced, merged). ``updates`` are other memories the plan rewrites (the
    superseded one), ``relations`` and ``audit`` are written with them. ``target_id`` names the
    existing memory involved (for a memory stored new: the one it was kept apart from, if any),
    ``reason`` says why in words. ``effects``: what the memory's own
    edges did (:mod:`hivemem.link_effects`), known after the unit is written.
    """

    outcome: WriteOutcome
    memory: Memory
    target_id: str | None = None
    updates: tuple[Memory, ...] = ()
    relations: tuple[Relation, ...] = ()
    audit: tuple[AuditEvent, ...] = ()
    reason: str = ""
    effects: LinkEffects = NO_EFFECTS  # what its edges did to their targets, once they are added
    writes: tuple[Memory, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "writes", (self.memory, *self.updates))


def _stronger(a: Source, b: Source) -> Source:
    return Source.USER_CONFIRMED if Source.USER_CONFIRMED in (a, b) else a


def _joined_details(existing: Memory, incoming: Memory) -> dict[str, Any]:
    """The repeat's details added to the memory's: keys it lacked are taken, and a user's
    confirmation wins over an inference on a key both give. Kept as they were when the union
    would pass the default size or depth limit (the repeat is then a repeat only)."""
    if not incoming.details:
        return existing.details
    confirmed = incoming.source is Source.USER_CONFIRMED and existing.source is not Source.USER_CONFIRMED
    joined = {**existing.details, **incoming.details} if confirmed else {**incoming.details, **existing.details}
    return existing.details if details_problem(joined, DEFAULT_LIMITS) else joined


def reinforce(existing: Memory, incoming: Memory, now: datetime) -> Memory:
    """The existing memory, strengthened by a repeat: one more access, the higher importance, the
    union of tags and files, the repeat's details added (:func:`_joined_details`), and the
    stronger source (a user's confirmation is never downgraded)."""
    return replace(
        existing,
        importance=max(existing.importance, incoming.importance),
        tags=sorted(set(existing.tags) | set(incoming.tags)),
        related_files=sorted(set(existing.related_files) | set(incoming.related_files)),
        details=_joined_details(existing, incoming),
        source=_stronger(existing.source, incoming.source),
        access_count=existing.access_count + 1,
        last_accessed_at=now,
        updated_at=now,
        verified_at=now,  # said again: it still holds
    )


def _reworded(existing: Memory, incoming: Memory, now: datetime) -> Memory:
    """A near-duplicate reinforces; a user's confirmed wording replaces an inferred one."""
    kept = reinforce(existing, incoming, now)
    if incoming.source is Source.USER_CONFIRMED and existing.source is not Source.USER_CONFIRMED:
        kept = replace(
            kept,
            title=incoming.title,
            content=incoming.content,
            content_hash=incoming.content_hash,
            embedding=incoming.embedding,
            embedding_model=incoming.embedding_model,
        )
    return kept


def _mean_direction(a: Sequence[float] | None, b: Sequence[float] | None) -> list[float] | None:
    """The unit vector between two unit vectors: the merged text's meaning, without a model call."""
    if a is None or b is None:
        return list(a) if a is not None else (list(b) if b is not None else None)
    summed = [x + y for x, y in zip(a, b, strict=True)]
    norm = sum(v * v for v in summed) ** 0.5
    return list(a) if norm == 0.0 else [v / norm for v in summed]


def _holds_several_facts(memory: Memory) -> bool:
    """A memory that merges gave more paragraphs (each merge appends the incoming text as one)."""
    return len([p for p in memory.content.split("\n\n") if p.strip()]) > 1


def merge(existing: Memory, incoming: Memory, now: datetime) -> Memory:
    """One memory holding both facts: the existing one with the incoming content appended (unless
    it already says it), the union of tags and files, the higher importance, the stronger source."""
    content = existing.content
    if incoming.content.strip().casefold() not in content.casefold():
        content = f"{content.rstrip()}\n\n{incoming.content.strip()}"
    merged = reinforce(existing, incoming, now)
    return replace(
        merged,
        content=content,
        content_hash=content_hash(content),
        embedding=_mean_direction(existing.embedding, incoming.embedding),
    )


def snapshot(memory: Memory) -> dict[str, Any]:
    """What an audit record keeps of a memory to restore it (the vector is recomputed on undo)."""
    return {
        "id": memory.id,
        "title": memory.title,
        "content": memory.content,
        "content_hash": memory.content_hash,
        "importance": memory.importance,
        "source": memory.source.value,
        "tags": list(memory.tags),
        "related_files": list(memory.related_files),
        "memory_type": memory.memory_type.value,
        "details": dict(memory.details),
        "state": memory.state.value,
        "valid_to": None if memory.valid_to is None else memory.valid_to.isoformat(),
    }


def superseded(
    older: Memory, newer: Memory, now: datetime, *, author: str, reason: str, **facts: Any
) -> tuple[Memory, AuditEvent]:
    """``older`` marked no longer valid by ``newer`` as of ``now``, and the ``supersede`` audit
    record that lets undo put it back (``facts``: what else the record should say, e.g. the cosine)."""
    detail = {"superseded": older.id, **facts, "reason": reason, "before": snapshot(older)}
    return replace(older, valid_to=now, updated_at=now), AuditEvent(
        "supersede", newer.id, newer.scope, author, detail, now
    )


def restored(current: Memory, snapshot: dict[str, Any], now: datetime) -> Memory:
    """``current`` with what an audit snapshot kept of it put back (undoing a merge or a supersede).
    Its vector is left as it is: the caller embeds the restored text again."""
    valid_to = snapshot.get("valid_to")
    return replace(
        current,
        title=snapshot["title"],
        content=snapshot["content"],
        content_hash=snapshot["content_hash"],
        importance=snapshot["importance"],
        source=Source(snapshot["source"]),
        tags=list(snapshot["tags"]),
        related_files=list(snapshot["related_files"]),
        details=dict(snapshot.get("details", current.details)),  # records from before details were kept
        valid_to=None if valid_to is None else datetime.fromisoformat(valid_to),
        state=MemoryState(snapshot["state"]) if "state" in snapshot else current.state,
        updated_at=now,
    )


def unmerged(snapshot: dict[str, Any], scope: str, now: datetime) -> Memory:
    """The memory a merge folded in, as it came (undoing the merge); to be embedded again."""
    return Memory(
        id=snapshot["id"],
        scope=scope,
        title=snapshot["title"],
        content=snapshot["content"],
        content_hash=snapshot["content_hash"],
        memory_type=MemoryType(snapshot["memory_type"]),
        importance=snapshot["importance"],
        source=Source(snapshot["source"]),
        tags=list(snapshot["tags"]),
        related_files=list(snapshot["related_files"]),
        details=dict(snapshot.get("details", {})),
        author=str(snapshot.get("author", "")),
        created_at=now,
        updated_at=now,
    )


def _exact(incoming: Memory, exact_duplicate: Memory, now: datetime) -> Resolution:
    if exact_duplicate.id == incoming.id:
        # A redelivered job: the stored memory stays as it is.
        return Resolution(WriteOutcome.STORED, exact_duplicate)
    return Resolution(
        WriteOutcome.REINFORCED, reinforce(exact_duplicate, incoming, now), exact_duplicate.id, reason=SAME_CONTENT
    )


def _similar_links(
    incoming: Memory, neighbours: Sequence[Neighbour], policy: ResolutionPolicy, now: datetime
) -> tuple[Relation, ...]:
    near = sorted(
        (n for n in neighbours if n.memory.id != incoming.id and n.cosine >= policy.auto_link_at),
        key=lambda n: n.cosine,
        reverse=True,
    )[: policy.auto_links]
    return tuple(
        Relation(incoming.id, n.memory.id, RelationType.SIMILAR, round(n.cosine, 4), incoming.author, now) for n in near
    )


def _stored(incoming: Memory, neighbours: Sequence[Neighbour], policy: ResolutionPolicy, now: datetime) -> Resolution:
    links = _similar_links(incoming, neighbours, policy, now) if policy.neighbours else ()
    return Resolution(WriteOutcome.STORED, incoming, relations=links)


def _candidates(incoming: Memory, neighbours: Sequence[Neighbour], now: datetime) -> list[Neighbour]:
    """The neighbours ``incoming`` may fold into or replace.

    Only a memory of the same kind can be the same fact: a decision is not merged into a
    preference. One no longer valid is history: a fact said again is resolved against what
    replaced it. One about another subject is another fact (:func:`_one_subject`).
    """
    return [
        n
        for n in neighbours
        if n.memory.id != incoming.id
        and n.memory.state is not MemoryState.ARCHIVED
        and n.memory.memory_type is incoming.memory_type
        and not n.memory.superseded_at(now)
        and _one_subject(n.memory, incoming)
    ]


def resolve(
    incoming: Memory,
    exact_duplicate: Memory | None,
    now: datetime,
    neighbours: Sequence[Neighbour] = (),
    policy: ResolutionPolicy = EXACT_ONLY,
) -> Resolution:
    """Decide what writing ``incoming`` does, given the memory holding its content hash and its
    nearest memories in the scope (any order; archived ones, ones no longer valid, other types and
    itself are ignored). Its ``reason`` names words as the memories wrote them."""
    decided = _resolve(incoming, exact_duplicate, now, neighbours, policy)
    if not decided.reason or decided.target_id is None:
        return decided
    target = next((n.memory for n in neighbours if n.memory.id == decided.target_id), None)
    texts = (incoming.title, incoming.content) + (() if target is None else (target.title, target.content))
    return replace(decided, reason=in_their_words(decided.reason, *texts))


def _resolve(
    incoming: Memory,
    exact_duplicate: Memory | None,
    now: datetime,
    neighbours: Sequence[Neighbour],
    policy: ResolutionPolicy,
) -> Resolution:
    if exact_duplicate is not None:
        return _exact(incoming, exact_duplicate, now)
    candidates = _candidates(incoming, neighbours, now)
    if policy.neighbours == 0 or not candidates or not resolves_by_meaning(incoming):
        return _stored(incoming, neighbours, policy, now)
    best = max(candidates, key=lambda n: n.cosine)
    if best.cosine < policy.contradiction_at:
        changed = _changed_by(incoming, candidates, policy)
        if changed is None:
            return _stored(incoming, neighbours, policy, now)
        best, verdict = changed
    else:
        # Judged above the reinforce threshold too: a changed value or a negation leaves the vectors
        # nearly where they were ("the pool is 20 connections" / "… 50 connections": cosine 0.95 with
        # MiniLM), and reinforcing would drop the new value without a trace.
        verdict = judge(best.memory.content, incoming.content)
    old = best.memory
    if verdict.relation is not Judged.CONTRADICTS:
        apart = _why_apart(old, incoming, verdict)
        if apart:
            # Unsure, or two facts of one template ("port 8003" / "port 8004" of two services): kept
            # apart, linked `similar`, whatever the cosine.
            return replace(_stored(incoming, neighbours, policy, now), target_id=old.id, reason=apart)
    if best.cosine >= policy.reinforce_at and verdict.relation is not Judged.CONTRADICTS:
        reason = f"the same fact in other words (cosine {best.cosine:.2f})"
        return Resolution(
            WriteOutcome.REINFORCED,
            _reworded(old, incoming, now),
            old.id,
            audit=(_fold_record("reinforce", old, incoming, best.cosine, reason, now),),
            reason=reason,
        )
    if verdict.relation is Judged.CONTRADICTS and _holds_several_facts(old):
        # A merged memory holds other facts besides the one contradicted: superseding it would
        # rank them all x0.1. The new memory is stored with a `conflicts` edge to it instead.
        clash = Relation(incoming.id, old.id, RelationType.CONFLICTS, 1.0, incoming.author, now)
        stored = _stored(incoming, neighbours, policy, now)
        others = tuple(r for r in stored.relations if r.target_id != old.id)
        return replace(stored, relations=(clash, *others), reason=verdict.reason)
    if verdict.relation is Judged.CONTRADICTS:
        link = Relation(incoming.id, old.id, RelationType.SUPERSEDES, 1.0, incoming.author, now)
        no_longer_valid, record = superseded(
            old, incoming, now, author=incoming.author, reason=verdict.reason, cosine=round(best.cosine, 4)
        )
        return Resolution(
            WriteOutcome.SUPERSEDED,
            incoming,
            old.id,
            updates=(no_longer_valid,),
            relations=(link, *(r for r in _similar_links(incoming, neighbours, policy, now) if r.target_id != old.id)),
            audit=(record,),
            reason=verdict.reason,
        )
    if verdict.relation is not Judged.COMPATIBLE:
        return _stored(incoming, neighbours, policy, now)
    titled_apart = titles_apart((old.title, old.content), (incoming.title, incoming.content))
    if titled_apart:
        return replace(_stored(incoming, neighbours, policy, now), target_id=old.id, reason=titled_apart)
    if not restates(old.content, incoming.content):
        # Merges are for the same statement said again; a fact with words of its own is a fact of
        # its own, kept to be found by them (linked `similar`).
        return replace(_stored(incoming, neighbours, policy, now), target_id=old.id, reason=_ADDS_ITS_OWN)
    merged = merge(old, incoming, now)
    if len(merged.content) > policy.merge_max_chars:
        return _stored(incoming, neighbours, policy, now)
    record = _fold_record("merge", old, incoming, best.cosine, verdict.reason, now)
    return Resolution(WriteOutcome.MERGED, merged, old.id, audit=(record,), reason=verdict.reason)


_ADDS_ITS_OWN = "it says something of its own"


def _one_subject(memory: Memory, incoming: Memory) -> bool:
    """Whether ``memory`` may be about what ``incoming`` is about: not when their titles, their
    identifiers or their numbered items name different subjects (:mod:`hivemem.subjects`)."""
    older, newer = (memory.title, memory.content), (incoming.title, incoming.content)
    return distinct_subjects(older, newer) is None and subjects_apart(older, newer) is None


def _changed_by(
    incoming: Memory, candidates: Sequence[Neighbour], policy: ResolutionPolicy
) -> tuple[Neighbour, Verdict] | None:
    """The neighbour a change ``incoming`` names takes back ("we moved from Postgres 14 to 16"
    against "Database is Postgres 14"), if one is at least ``named_change_at`` near it, with the
    judge's verdict on the two.

    Naming the old side is evidence no cosine gives: the two texts share a word or two and sit
    below the contradiction band (0.61 for that pair with MiniLM). Asked only when no neighbour is
    in the band: there the nearest one decides, as for any other write."""
    if not speaks_of_change(incoming.content):
        return None
    for near in sorted(candidates, key=lambda n: n.cosine, reverse=True):
        if near.cosine < policy.named_change_at:
            break
        verdict = judge(near.memory.content, incoming.content)
        if verdict.relation is Judged.CONTRADICTS:
            return near, verdict
    return None


def _why_apart(old: Memory, incoming: Memory, verdict: Verdict) -> str:
    """Why ``incoming`` may not be folded into ``old`` (reinforce or merge) on the judge's word;
    "" when it may.

    Not when each names a value the other never mentions (:func:`distinct_values`: the template
    facts a cosine cannot tell apart), nor when the judge found no conflict in a text that denies
    something or names a change (:func:`speaks_of_change`): the rules missed what it changes, so
    folding it would bury a contradiction in a merged memory.
    """
    values = distinct_values(old.content, incoming.content)
    if values is not None:
        return values
    if verdict.relation is Judged.COMPATIBLE and speaks_of_change(incoming.content):
        return "it speaks of a change the rules cannot place"
    return ""


def _fold_record(action: str, old: Memory, incoming: Memory, cosine: float, reason: str, now: datetime) -> AuditEvent:
    """The audit record of a fold: the memory as it was and the one folded in, so that undo can
    put both back (:mod:`api.services.undo`)."""
    return AuditEvent(
        action,
        old.id,
        incoming.scope,
        incoming.author,
        {
            "merged": incoming.id,
            "cosine": round(cosine, 4),
            "reason": reason,
            "before": snapshot(old),
            "incoming": snapshot(incoming) | {"author": incoming.author},
        },
        now,
    )
