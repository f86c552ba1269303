"""The service every interface calls: REST routes, MCP tools and the CLI hold no logic of their own.

Write path: validate (in :mod:`hivemem.schemas`) → resolve scope → assign id → run the memorize
job (in-process, or queued on Celery workers when a broker is set) → outcome, or the job id when
the job is not done within ``HIVEMEM_MEMORIZE_WAIT_S``.
Read path: recall in the scope set (scope + global); a recall writes nothing (a memory is
reinforced when used: read by id, cited, memorized again). Forget: confirm required, audit record
written. The store, embedder, runner and background passes are :class:`api.services.parts.Parts`'s,
which opens and closes them; this service and the others it hands out take what they need.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from api.services.audit_trail import AuditTrail
from api.services.briefing import briefing
from api.services.bulk_forget import forget_matching
from api.services.caller import Caller
from api.services.handoffs import handoff_memory, latest_handoff
from api.services.lifecycle import Lifecycle
from api.services.links import checked_links
from api.services.parts import Parts, make_reranker, open_configured
from api.services.secrets import HANDOFF_FIELDS, SecretScreen, noted, screened
from api.services.status import memory_status
from api.services.written import in_order, written_results
from hivemem.answers import (
    Briefing,
    BulkMemorizeResult,
    DeadLetterPublic,
    HandoffPublic,
    JobPublic,
    MemorizeAccepted,
    MemorizeResult,
    MemoryPublic,
    MemoryStatus,
    RecallResponse,
    RecallResult,
    RelatedResult,
)
from hivemem.config import Settings
from hivemem.cosine_bands import bands_for
from hivemem.embedding import Embedder
from hivemem.errors import (
    ConfirmationRequired,
    DuplicateMemoryError,
    JobNotFoundError,
    MemoryNotFoundError,
)
from hivemem.forget_schemas import BulkForgetAnswer, BulkForgetRequest
from hivemem.hashing import content_hash
from hivemem.jobs import JobState
from hivemem.model import (
    AuditEvent,
    Link,
    Memory,
    MemoryState,
    RelationType,
    new_memory_id,
    utcnow,
)
from hivemem.schemas import HandoffSave, MemoryCreate, PromoteRequest, RecallRequest
from hivemem.staleness import StalenessTuning, stale_days
from search import SearchFilter
from search.base import DEFAULT_STATES
from search.graph import graph_neighbours
from search.recall import Recaller, RecallParams
from workers.job_tuning import JobTuning
from workers.lifecycle_tuning import LifecycleTuning

if TYPE_CHECKING:
    from api.services.knowledge import KnowledgeService
    from api.services.operators import Operators
    from api.services.tokens import TokenService
    from api.services.transfer import Transfer

log = logging.getLogger(__name__)

__all__ = ["FORGET_NEEDS_CONFIRM", "MemoryService"]

# Memories linked to the results that recall adds, labelled "via graph".
GRAPH_NEIGHBOURS = 3

FORGET_NEEDS_CONFIRM = (
    "forget deletes a memory for good: call again with confirm=true. "
    "Old memories fade on their own; forget only what is wrong or harmful."
)


# With stale memories left out after ranking, recall asks for this many times the limit.
_STALE_OVERFETCH = 3
# Edges that name a memory without building on it: no reinforcement for their targets.
_NOT_A_USE = frozenset({RelationType.SUPERSEDES, RelationType.CLOSES, RelationType.CONFLICTS})


class MemoryService:
    """memorize / remember / get / forget over one store, one embedder and one job runner, and the
    way to the other services over the same parts: :attr:`lifecycle` (sleep, consolidation),
    :attr:`audit_trail` (the log, undo), :attr:`knowledge`, :attr:`tokens`, :attr:`operators`,
    :attr:`transfer`; :attr:`parts` warms, checks and closes what they share."""

    def __init__(self, parts: Parts, *, recall: RecallParams | None = None) -> None:
        """The service over ``parts`` (:class:`Parts` opens, owns and closes them); ``recall``: how
        it recalls (None: as configured)."""
        self.parts, self.settings = parts, parts.settings
        self.secrets = SecretScreen(self.settings.secret_policy)
        self.store, self.embedder, self.runner = parts.store, parts.embedder, parts.runner
        self.search_gate, self.model_gate, self.second_leg = parts.search_gate, parts.model_gate, parts.second_leg
        self._jobs = JobTuning()
        self.recaller = Recaller(
            self.store,
            self.embedder,
            recall or RecallParams(),
            make_reranker(self.settings),
            gate=self.search_gate,
            second=None if self.second_leg is None else self.second_leg.embedder,
        )
        self.audit_trail = AuditTrail(self.store, self.embedder)
        self.lifecycle = Lifecycle(self.settings, self.store, self.embedder, self._visible)
        parts.on_close(self.lifecycle.close)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        lazy_model: bool = False,
        recall: RecallParams | None = None,
    ) -> MemoryService:
        """A service over the configured store and embedder (:func:`api.services.parts.open_configured`);
        a store of another model's vectors is served with that model and re-embedded in the
        background, except by a ``lazy_model`` one (the CLI), which uses it as it is."""
        store, embedder, reembed_to = open_configured(settings, embedder, lazy_model=lazy_model)
        if reembed_to is None:
            return cls(Parts(settings, store, embedder, one_off=lazy_model), recall=recall)
        service = cls(Parts(settings, store, embedder), recall=recall)
        job = service.start_reembed(reembed_to, Caller(principal="server"))
        log.warning(
            "the store holds %s vectors and %s is configured: re-embedding in the background (job %s); "
            "recall serves the old vectors until it is done",
            service.store.embedding_model,
            reembed_to.model_id,
            job.id,
        )
        return service

    def reembed_job(self, caller: Caller = Caller()) -> JobPublic:
        """The job re-embedding this server's store (admin on ``*``). Raises ``JobNotFoundError``
        when none ran since the server started (its store already held the configured model)."""
        caller.require_everything("watch the re-embedding")
        if self.parts.reembedding is None:
            raise JobNotFoundError(f"no re-embedding ran: the store holds {self.store.embedding_model} vectors")
        return self.job(self.parts.reembedding.job.id)

    def wait_for_reembed(self, timeout_s: float) -> JobPublic:
        """The re-embed job once it ended, or as it stands after ``timeout_s``. Raises ``JobNotFoundError``."""
        if self.parts.reembedding is not None:
            self.parts.reembedding.wait(timeout_s)
        return self.reembed_job()

    def start_reembed(self, target: Embedder, caller: Caller = Caller()) -> JobPublic:
        """Re-embed the store with ``target`` in the background, or, while one runs, its job
        (:meth:`Parts.start_reembed`). Takes admin on ``*``."""
        caller.require_everything("re-embed the store")
        return JobPublic.of(self.parts.start_reembed(target, caller.principal))

    @functools.cached_property
    def knowledge(self) -> KnowledgeService:
        """The knowledge service over the same store and embedder (documents: :mod:`api.services.knowledge`)."""
        from api.services.knowledge import KnowledgeService

        return KnowledgeService(self.parts)

    @functools.cached_property
    def tokens(self) -> TokenService:
        """The team server's tokens in the same store (:mod:`api.services.tokens`)."""
        from api.http.auth import server_key
        from api.services.tokens import TokenService

        return TokenService(self.store, server_key(self.settings))

    @functools.cached_property
    def operators(self) -> Operators:
        """Listing, editing and counting memories (:mod:`api.services.operators`)."""
        from api.services.operators import Operators

        return Operators(self.store, self.embedder, self.secrets)

    @functools.cached_property
    def transfer(self) -> Transfer:
        """Export and import of the same store (:mod:`api.services.transfer`)."""
        from api.services.transfer import Transfer

        return Transfer(self.store, self.embedder, self.secrets)

    def _new_memory(self, request: MemoryCreate, caller: Caller) -> Memory:
        scope = caller.scope_for(request.scope, write=True)
        now = utcnow()
        return Memory(
            id=new_memory_id(),
            scope=scope,
            title=request.title,
            content=request.content,
            content_hash=content_hash(request.content),
            memory_type=request.memory_type,
            importance=request.importance,
            source=request.source,
            tags=sorted(set(request.tags)),
            related_files=list(dict.fromkeys(request.related_files)),
            author=caller.principal,
            created_at=now,
            updated_at=now,
            details=request.details,
            requested_links=checked_links(self.store, request, scope, caller),
            thread=request.thread or "",
        )

    def _new_batch(self, requests: list[MemoryCreate], caller: Caller) -> list[Memory]:
        """The memories of a bulk request, in its order (see :func:`in_order`)."""
        return in_order([self._new_memory(r, caller) for r in requests])

    def memorize(self, request: MemoryCreate, caller: Caller = Caller()) -> MemorizeResult | MemorizeAccepted:
        """Store a memory, or reinforce the identical one already in its scope.

        With a broker, a job not done within ``memorize_wait_s`` is answered with its id instead.
        A credential in its text is refused or redacted (the ``secret_policy`` setting).
        """
        (request,), (redacted,) = screened(self.secrets, [request], "")
        memory = self._new_memory(request, caller)
        ticket = self.runner.memorize(memory)
        self.parts.written()
        self._cited([memory])
        if ticket.results is None:
            return MemorizeAccepted(
                id=memory.id, scope=memory.scope, job_id=ticket.job_id, state=ticket.state, redacted=redacted or None
            )
        return noted(written_results(ticket, [memory]), [redacted])[0]

    def memorize_bulk(
        self, requests: list[MemoryCreate], caller: Caller = Caller(), *, wait_s: float | None = None
    ) -> BulkMemorizeResult:
        """Store many memories as one job (batched embedding); results once done within ``wait_s``.

        ``wait_s`` defaults to ``memorize_wait_s``; None in ``memorize_many`` means until done.
        """
        requests, redacted = screened(self.secrets, requests, "memories[{i}].")
        memories = self._new_batch(requests, caller)
        wait = self._jobs.memorize_wait_s if wait_s is None else wait_s
        ticket = self.runner.memorize_bulk(memories, wait_s=wait)
        self.parts.written()
        self._cited(memories)
        ids = [m.id for m in memories]
        results = None if ticket.results is None else noted(written_results(ticket, memories), redacted)
        return BulkMemorizeResult(job_id=ticket.job_id, state=ticket.state, ids=ids, results=results)

    def memorize_many(self, requests: list[MemoryCreate], caller: Caller = Caller()) -> list[MemorizeResult]:
        """Bulk memorize with batched embedding, waiting until done; same outcomes as one call per memory."""
        requests, redacted = screened(self.secrets, requests, "memories[{i}].")
        memories = self._new_batch(requests, caller)
        ticket = self.runner.memorize_bulk(memories, wait_s=None)
        self.parts.written()
        self._cited(memories)
        return noted(written_results(ticket, memories), redacted)

    def _cited(self, memories: Sequence[Memory]) -> None:
        """A new memory's edges to memories it builds on use them: they are reinforced. Not the
        targets it replaces or closes (``supersedes``, ``closes``), nor the ones it disputes."""
        used = [link.target_id for m in memories for link in m.requested_links if link.type not in _NOT_A_USE]
        self.runner.record_access(list(dict.fromkeys(used)))

    def job(self, job_id: str, caller: Caller = Caller()) -> JobPublic:
        """A job's state, progress and result, for its owner or an admin of every scope it writes in.
        Raises ``JobNotFoundError``, for another's job too: its id says nothing."""
        job = self.runner.board.get(job_id)
        if not caller.may_read_job(job):
            raise JobNotFoundError(f"no job {job_id!r} (unknown, or expired)")
        return JobPublic.of(job)

    def jobs(self, caller: Caller = Caller(), *, state: JobState | None = None, limit: int = 100) -> list[JobPublic]:
        """The newest jobs (in ``state`` when given), without their per-item results; admin on
        ``*``, as jobs carry no owner and name every scope's work."""
        caller.require_everything("list the jobs")
        return [JobPublic.of(job) for job in self.runner.board.recent(limit, state)]

    def dead_letters(self, caller: Caller = Caller(), limit: int = 100) -> list[DeadLetterPublic]:
        """Tasks that failed for good, newest first (admin on ``*``: an error may quote any scope)."""
        caller.require_everything("read the dead letters")
        return [DeadLetterPublic.of(letter) for letter in self.runner.board.dead_letters(limit)]

    def remember(self, request: RecallRequest, caller: Caller = Caller()) -> RecallResponse:
        """Recall by meaning in the caller's scope plus global.

        A recall writes nothing: being listed among the results is not being used. (Reinforcing
        every result made a question's ranking depend on the questions asked before it; turned off,
        hit@5 on a held-out small-store set went from 0.95 to 0.97.) A memory is reinforced when it
        is used: read by id (:meth:`get`), cited by an edge of a new memory, or memorized again.
        """
        scopes = caller.readable(request.scope)
        where = SearchFilter(
            scopes=scopes,
            memory_types=tuple(request.memory_types or ()),
            states=tuple(dict.fromkeys(request.states)) if request.states else DEFAULT_STATES,
            tags=tuple(request.tags or ()),
            created_after=request.created_after,
            created_before=request.created_before,
        )
        limit = request.limit or self.recaller.params.default_limit
        now = utcnow()
        with self.model_gate.reading():
            hits = self.recaller.recall(
                request.queries(),
                where,
                # Stale ones left out after ranking: enough candidates that the rest still fill the limit.
                limit=limit * _STALE_OVERFETCH if request.exclude_stale else limit,
                now=now,
                min_relevance=request.min_relevance,
            )
        staleness = StalenessTuning()
        stale = {h.memory.id: stale_days(h.memory, now, staleness) for h in hits}
        if request.exclude_stale:
            hits = [h for h in hits if stale[h.memory.id] is None][:limit]
        linked = graph_neighbours(self.store, hits, where, limit=GRAPH_NEIGHBOURS, hops=request.graph_hops)
        related = [(g, stale_days(g.memory, now, staleness)) for g in linked]
        if request.exclude_stale:
            related = [(g, days) for g, days in related if days is None]
        origin = {h.memory.id: round(h.score, 6) for h in hits}
        return RecallResponse(
            results=[RecallResult.of(h, explain=request.explain).marked_stale(stale[h.memory.id]) for h in hits],
            related=[
                RelatedResult.reached(
                    g.memory,
                    g.score,
                    g.linked_from,
                    g.relation,
                    explain={"graph_hops": g.hops, "from_score": origin[g.linked_from], "graph": g.score}
                    if request.explain
                    else None,
                ).marked_stale(days)
                for g, days in related
            ],
            scopes=scopes,
            knn_related_from=bands_for(self.embedder.model_id).query_related if request.explain else None,
        )

    def _visible(self, memory_id: str, caller: Caller, scope: str | None) -> Memory:
        """The memory, if it is in the caller's recall scopes; else the same error as for an unknown id."""
        try:
            memory = self.store.get(memory_id)
        except MemoryNotFoundError:
            raise caller.not_found(memory_id, scope) from None
        return caller.visible(memory, scope)

    def promote(
        self, memory_id: str, request: PromoteRequest, caller: Caller = Caller(), *, scope: str | None = None
    ) -> MemorizeResult | MemorizeAccepted:
        """Copy a memory the caller can read (in its scope, or ``scope``) into ``request.to``, where it
        must write: same text, type, tags and details, the original's author kept, and a
        ``derived_from`` edge to the original (shown only to those who may read the original).
        The copy is memorized like any write (an identical one in the scope is reinforced), and the
        promotion is audited. Raises ``MemoryNotFoundError``, ``PermissionDeniedError``, and
        ``DuplicateMemoryError`` (409) when the memory is already in that scope."""
        original = self._visible(memory_id, caller, scope)
        target = caller.scope_for(request.to, write=True)
        if target == original.scope:
            raise DuplicateMemoryError(f"memory {memory_id} is already in scope {target!r}")
        now = utcnow()
        copy = replace(
            original,
            id=new_memory_id(),
            scope=target,
            state=MemoryState.WORKING,
            created_at=now,
            updated_at=now,
            last_accessed_at=None,
            access_count=0,
            valid_from=None,
            valid_to=None,
            embedding=None,
            embedding_model="",
            requested_links=(Link(original.id, RelationType.DERIVED_FROM, 1.0, "promoted"),),
        )
        ticket = self.runner.memorize(copy)
        detail = {"from": original.id, "from_scope": original.scope, "original_author": original.author}
        self.store.audit(AuditEvent("promote", copy.id, target, caller.principal, detail))
        if ticket.results is None:
            return MemorizeAccepted(id=copy.id, scope=target, job_id=ticket.job_id, state=ticket.state)
        return written_results(ticket, [copy])[0]

    def get(self, memory_id: str, caller: Caller = Caller(), *, scope: str | None = None) -> MemoryPublic:
        """One memory by id, from the caller's scope (or ``scope``) plus global; reading it is using
        it, so it is reinforced (in the background). Raises ``MemoryNotFoundError``."""
        memory = self._visible(memory_id, caller, scope)
        self.runner.record_access([memory.id])
        readable = caller.readable(scope)
        edges = self.store.relations(memory.id)
        ends = {m.id: m.scope for m in self.store.get_many([r.other_end(memory.id) for r in edges], vectors=False)}
        # An edge to a memory the caller cannot read is not shown: its id would say that it exists.
        return MemoryPublic.of(memory, [r for r in edges if ends.get(r.other_end(memory.id)) in readable])

    def forget(
        self, memory_id: str, *, confirm: bool, caller: Caller = Caller(), scope: str | None = None
    ) -> MemoryPublic:
        """Delete a memory of the caller's scopes for good, with an audit record.

        Raises ``ConfirmationRequired`` without confirm, ``MemoryNotFoundError`` for an id that is
        unknown or outside the caller's scopes.
        """
        if not confirm:
            raise ConfirmationRequired(FORGET_NEEDS_CONFIRM)
        memory = self._visible(memory_id, caller, scope)
        caller.require_changing(memory)
        removed = self.store.delete(memory_id)
        self.store.audit(
            AuditEvent(
                action="forget",
                memory_id=removed.id,
                scope=removed.scope,
                author=caller.principal,
                # Ids and a hash only: the log outlives the memory, and forgetting must not keep its text.
                detail={"content_hash": removed.content_hash, "memory_type": removed.memory_type.value},
            )
        )
        return MemoryPublic.of(removed)

    def forget_matching(self, request: BulkForgetRequest, caller: Caller = Caller()) -> BulkForgetAnswer:
        """Forget in bulk after a preview (:func:`api.services.bulk_forget.forget_matching`)."""
        with self.model_gate.reading():
            return forget_matching(self.store, self.recaller, request, caller)

    def save_handoff(self, request: HandoffSave, caller: Caller = Caller()) -> MemorizeResult | MemorizeAccepted:
        """Store a session handoff as a ``handoff`` memory of the scope; the latest is what ``load_handoff``
        returns. A credential in it is refused or redacted, named by the handoff's own field."""
        request, redacted = self.secrets.model(request, HANDOFF_FIELDS)
        result = self.memorize(handoff_memory(request), caller)
        return result.model_copy(update={"redacted": redacted or None})

    def load_handoff(self, caller: Caller = Caller(), *, scope: str | None = None) -> HandoffPublic | None:
        """The latest handoff of the caller's scope (or ``scope``), or None."""
        return latest_handoff(self.store, caller, scope)

    def briefing(self, caller: Caller = Caller(), *, scope: str | None = None) -> Briefing:
        """What a session starting in the caller's scope (or ``scope``) should know
        (:func:`api.services.briefing.briefing`)."""
        return briefing(self.store, caller, scope, now=utcnow())

    def status(self, caller: Caller = Caller(), *, scope: str | None = None) -> MemoryStatus:
        """Where the caller's scope (or ``scope``) stands (:func:`api.services.status.memory_status`)."""
        return memory_status(
            self.store,
            caller.scope_for(scope, write=False),
            queue_depth=self.runner.queue_depth(),
            rerank_fallbacks=dict(getattr(self.recaller.reranker, "fallbacks", {})),
        )

    def start_background(self) -> None:
        """Start what a server runs beside its requests: the sleep timer and the second model's
        filler. Every server that opens a service calls it; a one-off command does not."""
        self.lifecycle.start_sleep_timer()
        self.parts.start_second_leg()

    def warnings(self) -> list[str]:
        """What an operator should know at start: setups that work but can lose data, or whose
        deduplication reads cosine bands measured for another model."""
        borrowed = LifecycleTuning().borrowed_bands_warning(self.embedder.model_id)
        return [*self.runner.warnings(), *([borrowed] if borrowed else [])]

    def close(self) -> None:
        """Finish background jobs, stop the embedder's thread and close the store (:meth:`Parts.close`)."""
        self.parts.close()
