"""The lifecycle of a store's memories, as callers ask for it: a goal's findings consolidated under
its closing note, and sleep passes (consolidation, then archiving), each under the one lock that
every process sleeping this store shares, and the embedded shape's timer of them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import timedelta

from api.services.caller import Caller
from hivemem.answers import ArchivedPublic, ConsolidationPublic, SleepResult
from hivemem.config import Settings
from hivemem.consolidation import Consolidation
from hivemem.decay import raw_strength
from hivemem.embedding import Embedder
from hivemem.model import Memory, utcnow
from hivemem.schemas import SleepRequest
from search import Store
from search.capabilities import LeasesSleep
from workers.lifecycle import archive_faded, consolidate_goal, sleep_consolidate, sleep_policy
from workers.sleep_lock import broker_sleep_lock, sleep_lock
from workers.sleep_timer import SleepTimer

__all__ = ["Lifecycle"]


class Lifecycle:
    """Goal consolidation and sleep over one store. ``visible`` finds a memory the caller may read
    (raising ``MemoryNotFoundError`` otherwise), as the memory service does."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder,
        visible: Callable[[str, Caller, str | None], Memory],
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self._visible = visible
        self._sleep_timer: SleepTimer | None = None

    def consolidate_goal(
        self, goal_id: str, caller: Caller = Caller(), *, scope: str | None = None
    ) -> ConsolidationPublic | None:
        """Consolidate a goal's working findings under its closing note (or the goal itself); None
        when none is left. Raises ``MemoryNotFoundError`` (also outside the caller's scopes) and
        ``NotAGoalError`` for a memory that is not a goal."""
        goal = self._visible(goal_id, caller, scope)
        caller.scope_for(goal.scope, write=True)
        plan = consolidate_goal(self.store, goal.id, utcnow(), author=caller.principal)
        return None if plan is None else _consolidation_public(plan, self.store)

    def sleep(self, request: SleepRequest, caller: Caller = Caller()) -> SleepResult:
        """One sleep pass over the caller's scope (or ``request.scope``), now, whenever it last ran:
        consolidation, then (unless ``request.archive`` is false) archiving, as the scheduled pass."""
        scope = caller.scope_for(request.scope, write=True)
        base = sleep_policy(model_id=self.embedder.model_id)
        policy = replace(
            base,
            threshold=base.threshold if request.threshold is None else request.threshold,
            min_size=base.min_size if request.min_size is None else request.min_size,
        )
        # After any pass of another process (or of the timer) has ended: one pass at a time plans
        # from what the store holds, not from what another is rewriting.
        dry = request.dry_run
        with self.sleep_lock(wait=True):
            now = utcnow()
            report = sleep_consolidate(self.store, self.embedder, scope, now, policy, dry_run=dry)
            faded = archive_faded(self.store, scope, now, policy, dry_run=dry) if request.archive else []
        written = None if report.dry_run else self.store
        return SleepResult(
            scope=scope,
            candidates=report.candidates,
            dry_run=report.dry_run,
            consolidations=[_consolidation_public(p, written) for p in report.consolidations],
            archived=[
                ArchivedPublic(
                    id=m.id,
                    title=m.title,
                    memory_type=m.memory_type,
                    strength=round(raw_strength(m, now, **policy.decay), 4),
                )
                for m in faded
            ],
        )

    def sleep_lock(self, *, wait: bool) -> AbstractContextManager[bool]:
        """The lock every sleep pass over this store takes (:mod:`workers.sleep_lock`): the broker's,
        shared with the workers' scheduled pass, when there is one; else the store's own where it
        may be served from several machines (an OpenSearch cluster); else the data folder's, shared
        with the other processes serving the store. It yields whether it is held."""
        if self.settings.broker_url:
            return broker_sleep_lock(self.settings.broker_url, wait=wait)
        if isinstance(self.store, LeasesSleep):
            return self.store.sleep_lease(wait=wait)
        return sleep_lock(self.settings.data_dir, wait=wait)

    def start_sleep_timer(self) -> None:
        """Sleep-consolidate each scope once per ``sleep_interval_hours`` in the background (embedded
        shape; with a broker, beat schedules it). Stopped by ``close``."""
        if self.settings.broker_url or self.settings.sleep_interval_hours <= 0 or self._sleep_timer is not None:
            return
        self._sleep_timer = SleepTimer(
            self.store,
            self.embedder,
            sleep_policy(model_id=self.embedder.model_id),
            timedelta(hours=self.settings.sleep_interval_hours),
            # Every process serving this store runs a timer (a server, each stdio session): one sleeps.
            lock=lambda: self.sleep_lock(wait=False),
        )
        self._sleep_timer.start()

    def close(self) -> None:
        """Stop the sleep timer, if it runs."""
        if self._sleep_timer is not None:
            self._sleep_timer.stop()


def _consolidation_public(plan: Consolidation, store: Store | None) -> ConsolidationPublic:
    # The audit record's id is the store's: the parent's newest consolidation (None when dry).
    audit_id = None
    if store is not None:
        ids = [e.id for e in store.audit_log(plan.parent.id) if e.action == "consolidate"]
        audit_id = ids[-1] if ids else None
    return ConsolidationPublic(
        parent_id=plan.parent.id,
        parent_title=plan.parent.title,
        source_ids=[m.id for m in plan.sources],
        audit_id=audit_id,
    )
