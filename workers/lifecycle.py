"""Lifecycle jobs over any store: the edges asked for on memorize, goal consolidation, sleep.

Each reads what it needs through the Store contract, plans with the pure core
(:mod:`hivemem.consolidation`) and writes the plan: sources first, then the parent, its edges and
one audit record, so a pass cut short leaves no parent without its sources. Each is idempotent:
only ``working`` memories are consolidated, so running a pass again finds nothing new.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from hivemem.consolidation import Consolidation, clusters, consolidate, insight_from
from hivemem.decay import ARCHIVE_IDLE_DAYS, archivable, raw_strength, strength
from hivemem.embedding import Embedder
from hivemem.errors import MemoryNotFoundError, NotAGoalError
from hivemem.link_effects import NO_EFFECTS, ClosedGoal, LinkEffects
from hivemem.model import (
    AuditEvent,
    DuplicatePolicy,
    Link,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
    RelationType,
    WriteOutcome,
    new_memory_id,
)
from hivemem.resolution import Resolution, resolves_by_meaning, snapshot, superseded
from search.base import SearchFilter, Store
from search.recall_params import RecallParams
from workers.lifecycle_tuning import LifecycleTuning

__all__ = [
    "SLEEP_AUTHOR",
    "SleepPolicy",
    "SleepReport",
    "apply_links",
    "archive_faded",
    "consolidate_goal",
    "last_sleep",
    "sleep_consolidate",
    "sleep_due",
    "sleep_policy",
    "supersede_earlier_progress",
]

log = logging.getLogger(__name__)

SLEEP_AUTHOR = "hivemem-sleep"
_SLEEP_CANDIDATES = 5000  # the newest working memories of a scope one pass looks at
_NEIGHBOURS = 50  # the nearest of each a cluster may take
_BLOCK = 512  # rows of the similarity matrix computed at once


def apply_links(
    store: Store, incoming: Sequence[Memory], resolutions: Sequence[Resolution], now: datetime
) -> list[LinkEffects]:
    """Add the edges each incoming memory asked for, from the memory it ended in; what they did to
    their targets, one per incoming memory.

    A ``supersedes`` edge also marks its target no longer valid (audited, undoable); a ``closes``
    edge to a goal consolidates the goal's findings under the closing memory. A target forgotten
    since the gateway checked it is skipped: the memory is written, the edge cannot be.
    """
    effects: list[LinkEffects] = []
    for memory, resolution in zip(incoming, resolutions, strict=True):
        effects.append(_apply_own_links(store, memory, resolution, now))
    return effects


def _apply_own_links(store: Store, memory: Memory, resolution: Resolution, now: datetime) -> LinkEffects:
    """One incoming memory's edges, added in one write; then what the changing ones did."""
    source = resolution.memory
    links: list[Link] = []
    seen: set[tuple[str, RelationType]] = set()
    for link in memory.requested_links:
        # The first link of a target and type, as the store keeps the first edge of each.
        if link.target_id != source.id and (link.target_id, link.type) not in seen:
            seen.add((link.target_id, link.type))
            links.append(link)
    if not links:
        return NO_EFFECTS
    targets = {m.id: m for m in store.get_many([link.target_id for link in links])}
    edges = {
        link: Relation(source.id, link.target_id, link.type, link.strength, memory.author, now, link.description)
        for link in links
        if link.target_id in targets
    }
    try:
        store.add_relations(list(edges.values()))  # one write: on OpenSearch one refresh, not one an edge
    except MemoryNotFoundError:  # an end forgotten since it was read: add them one by one
        edges = {link: edge for link, edge in edges.items() if _added(store, edge)}
    superseded: list[str] = []
    closed: list[ClosedGoal] = []
    for link in links:
        if link not in edges:
            log.warning(
                "memory %s: its %s edge to %s was not added, the target is gone",
                source.id,
                link.type,
                link.target_id,
            )
            continue
        target = targets[link.target_id]
        if link.type is RelationType.SUPERSEDES:
            if _supersede(store, source, target, now, memory.author):
                superseded.append(target.id)
        elif link.type is RelationType.CLOSES and target.memory_type is MemoryType.GOAL:
            plan = consolidate_goal(store, target.id, now, author=memory.author, parent_id=source.id)
            folded = () if plan is None else tuple(m.id for m in plan.sources)
            closed.append(ClosedGoal(target.id, folded))
    return LinkEffects(tuple(superseded), tuple(closed))


def _added(store: Store, edge: Relation) -> bool:
    try:
        store.add_relation(edge)
    except MemoryNotFoundError:
        return False
    return True


def _supersede(
    store: Store,
    newer: Memory,
    older: Memory,
    now: datetime,
    author: str,
    reason: str = "a supersedes edge asked for on memorize",
) -> bool:
    """Mark ``older`` no longer valid, superseded by ``newer``; False when it already was."""
    if older.valid_to is not None:
        return False
    no_longer_valid, record = superseded(older, newer, now, author=author, reason=reason)
    if not store.put(no_longer_valid, DuplicatePolicy.UPDATE):
        return False  # forgotten meanwhile: nothing left to supersede
    store.audit(record)
    return True


_PROGRESS_SCAN = 500  # the newest progress notes of a scope a new one is compared with


def supersede_earlier_progress(
    store: Store, incoming: Sequence[Memory], resolutions: Sequence[Resolution], now: datetime
) -> None:
    """A progress note stored for a feature supersedes the feature's earlier notes still valid:
    ``supersedes`` edges, ``valid_to`` set, audited and undoable like any supersede."""
    for memory, resolution in zip(incoming, resolutions, strict=True):
        if memory.memory_type is not MemoryType.PROGRESS or resolution.outcome is not WriteOutcome.STORED:
            continue
        feature = memory.details.get("feature")
        where = SearchFilter(scopes=[memory.scope], memory_types=(MemoryType.PROGRESS,), exclude_ids=(memory.id,))
        for earlier in store.list_memories(where, _PROGRESS_SCAN):
            if earlier.details.get("feature") != feature or earlier.valid_to is not None:
                continue
            if earlier.created_at > memory.created_at:
                continue  # a note written later (a delayed job): it is the newer one
            store.add_relation(Relation(memory.id, earlier.id, RelationType.SUPERSEDES, 1.0, memory.author, now))
            _supersede(store, memory, earlier, now, memory.author, f"a newer progress note on {feature}")


def _apply(store: Store, plan: Consolidation) -> None:
    # Batched writes: on OpenSearch one memory or edge at a time waits for a refresh each. The
    # sources are updates (one forgotten meanwhile stays forgotten); the parent may be new.
    store.put_many(plan.sources, DuplicatePolicy.UPDATE)
    store.put_many([plan.parent], DuplicatePolicy.OVERWRITE)
    store.add_relations(plan.relations)
    store.audit(plan.audit)


def consolidate_goal(
    store: Store, goal_id: str, now: datetime, *, author: str, parent_id: str | None = None
) -> Consolidation | None:
    """Consolidate the working findings that ``achieves`` goal ``goal_id`` under ``parent_id``, or
    else under the newest memory that ``closes`` it, or else under the goal itself. None when no
    finding is left to consolidate. Raises ``MemoryNotFoundError``, or ``NotAGoalError`` when
    ``goal_id`` is not a goal."""
    goal = store.get(goal_id)
    if goal.memory_type is not MemoryType.GOAL:
        raise NotAGoalError(f"memory {goal_id} is a {goal.memory_type.value}, not a goal")
    edges = [r for r in store.relations(goal.id) if r.target_id == goal.id]
    if parent_id is None:
        closers = sorted((r for r in edges if r.type is RelationType.CLOSES), key=lambda r: r.created_at)
        parent_id = closers[-1].source_id if closers else goal.id
    parent = store.get(parent_id)
    findings = store.get_many([r.source_id for r in edges if r.type is RelationType.ACHIEVES])
    sources = [m for m in findings if m.state is MemoryState.WORKING and m.id != parent.id and m.scope == goal.scope]
    if not sources:
        return None
    plan = consolidate(parent, sources, now, author=author, reason=f"goal {goal.id} ({goal.title}) closed")
    _apply(store, plan)
    return plan


@dataclass(frozen=True, slots=True)
class SleepPolicy:
    """Which memories a sleep pass consolidates (:class:`LifecycleTuning` ``sleep_*``), and how
    strength decays for the archiving that follows it (recall's ``decay_half_life_days`` and
    ``access_boost``); :func:`sleep_policy` builds it as configured."""

    threshold: float
    min_size: int
    window_days: float
    base_half_life_days: float
    access_boost: float
    protect_at: float = 0.3  # a neighbour this strong keeps a faded memory out of the archive

    @property
    def decay(self) -> dict[str, float]:
        """The keyword arguments of :mod:`hivemem.decay`'s strength functions."""
        return {"base_half_life_days": self.base_half_life_days, "access_boost": self.access_boost}


@dataclass(frozen=True, slots=True)
class SleepReport:
    """What one pass over one scope did (or, dry, would do)."""

    scope: str
    candidates: int
    consolidations: tuple[Consolidation, ...]
    dry_run: bool
    archived: tuple[Memory, ...] = ()
    """The memories the pass moved to the archive, as they were before (without vectors)."""


def _sleep_marker(scope: str) -> str:
    # The audit trail keeps each pass under this name: a marker every process and store shares.
    return f"sleep:{scope}"


def last_sleep(store: Store, scope: str) -> datetime | None:
    """When ``scope`` was last sleep-consolidated (not dry), if ever."""
    passes = store.audit_log(_sleep_marker(scope))
    return passes[-1].at if passes else None


def _near(candidates: Sequence[Memory], threshold: float) -> dict[str, list[tuple[str, float]]]:
    """Each candidate's nearest others at ``threshold`` or above, by cosine, best first."""
    raw = np.asarray([m.embedding for m in candidates], dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    vectors = (raw / np.where(norms == 0, 1, norms)).astype(np.float32)
    near: dict[str, list[tuple[str, float]]] = {}
    for start in range(0, len(candidates), _BLOCK):
        scores = vectors[start : start + _BLOCK] @ vectors.T
        for row, memory in enumerate(candidates[start : start + _BLOCK]):
            order = np.argsort(-scores[row])[: _NEIGHBOURS + 1]
            near[memory.id] = [
                (candidates[j].id, float(scores[row, j]))
                for j in order
                if j != start + row and scores[row, j] >= threshold
            ]
    return near


def sleep_consolidate(
    store: Store,
    embedder: Embedder,
    scope: str,
    now: datetime,
    policy: SleepPolicy | None = None,
    *,
    dry_run: bool = False,
    new_id: Callable[[], str] = new_memory_id,
) -> SleepReport:
    """One sleep pass over ``scope``: clusters of at least ``min_size`` working memories of the
    last ``window_days``, each within ``threshold`` of its seed, become one insight built from
    their text, with the sources muted under it. Memories deduplicated by exact content only
    (conversation turns, handoffs, progress, imports) are left alone, as on write. ``policy`` None:
    as configured."""
    policy = policy or sleep_policy(model_id=embedder.model_id)
    where = SearchFilter(
        scopes=[scope], states=(MemoryState.WORKING,), created_after=now - timedelta(days=policy.window_days)
    )
    candidates = [
        m
        for m in store.list_memories(where, _SLEEP_CANDIDATES)
        if m.embedding is not None and resolves_by_meaning(m) and m.memory_type is not MemoryType.GOAL
    ]
    groups = (
        clusters(candidates, _near(candidates, policy.threshold), threshold=policy.threshold, min_size=policy.min_size)
        if len(candidates) >= policy.min_size
        else []
    )
    plans = []
    for group in groups:
        insight = insight_from(group, memory_id=new_id(), now=now, author=SLEEP_AUTHOR)
        insight.embedding = embedder.embed_passages([insight.embedding_text()])[0]
        insight.embedding_model = embedder.model_id
        plans.append(
            consolidate(
                insight,
                group,
                now,
                author=SLEEP_AUTHOR,
                reason=f"sleep: {len(group)} memories within cosine {policy.threshold} of each other",
                created=True,
            )
        )
    if not dry_run:
        for plan in plans:
            _apply(store, plan)
        store.audit(
            AuditEvent(
                "sleep",
                _sleep_marker(scope),
                scope,
                SLEEP_AUTHOR,
                {"candidates": len(candidates), "insights": [p.parent.id for p in plans]},
                now,
            )
        )
    return SleepReport(scope, len(candidates), tuple(plans), dry_run)


_ARCHIVE_SCAN = 20_000  # the memories of a scope one archiving pass looks at (newest first)
_ARCHIVE_PAGE = 500  # faded memories whose edges and their far ends are read at once


def archive_faded(
    store: Store, scope: str, now: datetime, policy: SleepPolicy | None = None, *, dry_run: bool = False
) -> list[Memory]:
    """Archive the memories of ``scope`` that have faded (strength under the floor, idle for a week)
    unless an edge ties them to a memory still strong (chain protection); the memories moved, as
    they were (read without vectors), or on a ``dry_run`` those that would be, nothing written.

    Archived memories leave default recall and stay stored, found with ``states: [archived]``;
    each move is audited (``archive``) and undone like a merge. ``policy`` None: as configured.
    """
    policy = policy or sleep_policy()
    where = SearchFilter(
        scopes=[scope],
        states=(MemoryState.WORKING, MemoryState.CONSOLIDATED),
        created_before=now - timedelta(days=ARCHIVE_IDLE_DAYS),
    )
    # Read without vectors: most of what a scope holds stays; the ones that move are read whole below.
    scanned = store.list_memories(where, _ARCHIVE_SCAN, vectors=False)
    faded = [m for m in scanned if archivable(m, now, **policy.decay)]
    archived: list[Memory] = []
    leaving: set[str] = set()  # the ids found unprotected so far: they protect nothing further on
    for start in range(0, len(faded), _ARCHIVE_PAGE):
        unprotected = _unprotected(store, faded[start : start + _ARCHIVE_PAGE], leaving, now, policy)
        if dry_run:
            archived += unprotected
            continue
        moving = store.get_many([m.id for m in unprotected])  # with their vectors: the writes keep them
        # One write of the memories, one of their records: on OpenSearch each write waits for a refresh.
        store.put_many([replace(m, state=MemoryState.ARCHIVED, updated_at=now) for m in moving], DuplicatePolicy.UPDATE)
        store.audit_many([_archive_record(m, now, policy) for m in moving])
        moved = {m.id for m in moving}  # one forgotten meanwhile is not among them
        archived += [m for m in unprotected if m.id in moved]
    return archived


def _unprotected(
    store: Store, faded: list[Memory], archived: set[str], now: datetime, policy: SleepPolicy
) -> list[Memory]:
    """The memories of ``faded`` that no edge ties to a memory still strong, in order, each added to
    ``archived``: one in it (found unprotected on an earlier page, or earlier in ``faded``) protects
    nothing. The edges and their far ends are read once for all of ``faded``."""
    ids = {m.id for m in faded}
    others: dict[str, set[str]] = {}
    for edge in store.relations_of(sorted(ids)):
        for end in (edge.source_id, edge.target_id):
            if end in ids:
                others.setdefault(end, set()).add(edge.other_end(end))
    ends = {m.id: m for m in store.get_many(sorted(set().union(*others.values())), vectors=False)}
    unprotected: list[Memory] = []
    for memory in faded:
        tied = [ends[i] for i in sorted(others.get(memory.id, ())) if i in ends]
        if any(
            e.id not in archived
            and e.state is not MemoryState.ARCHIVED
            and strength(e, now, **policy.decay) >= policy.protect_at
            for e in tied
        ):
            continue
        archived.add(memory.id)
        unprotected.append(memory)
    return unprotected


def _archive_record(memory: Memory, now: datetime, policy: SleepPolicy) -> AuditEvent:
    """The audit record of moving ``memory`` to the archive: the strength it had faded to, and the
    memory as it was (what undo restores)."""
    faded = raw_strength(memory, now, **policy.decay)
    return AuditEvent(
        "archive",
        memory.id,
        memory.scope,
        SLEEP_AUTHOR,
        {"reason": f"faded to strength {faded:.4f}", "before": snapshot(memory)},
        now,
    )


def sleep_due(
    store: Store, embedder: Embedder, now: datetime, policy: SleepPolicy, interval: timedelta
) -> list[SleepReport]:
    """Sleep-consolidate every scope whose last pass is ``interval`` or more ago (or never ran)."""
    reports = []
    for scope in store.scopes():
        last = last_sleep(store, scope)
        if last is None or now - last >= interval:
            report = sleep_consolidate(store, embedder, scope, now, policy)
            reports.append(replace(report, archived=tuple(archive_faded(store, scope, now, policy))))
    return reports


def sleep_policy(
    tuning: LifecycleTuning | None = None, recall: RecallParams | None = None, *, model_id: str = ""
) -> SleepPolicy:
    """The sleep pass ``tuning`` and the decay of ``recall`` ask for (None: as configured), its
    clusters read against the cosine bands of the model ``model_id`` (``""``: MiniLM's)."""
    tuning = tuning or LifecycleTuning()
    recall = recall or RecallParams()
    return SleepPolicy(
        tuning.sleep_cosine(model_id),
        tuning.sleep_min_size,
        tuning.sleep_window_days,
        recall.decay_half_life_days,
        recall.access_boost,
    )
