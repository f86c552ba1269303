"""The service every interface calls: REST routes, MCP tools and the CLI hold no logic of their own.

Write path: validate (in :mod:`hivemem.schemas`) → resolve scope → assign id → run the memorize
job → outcome. Read path: recall in the scope set (scope + global) → access reinforcement queued
in the background. Forget: confirm required, audit record written.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass

from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.errors import ConfirmationRequired
from hivemem.hashing import content_hash
from hivemem.model import GLOBAL_SCOPE, AuditEvent, Memory, RetrievalMode, new_memory_id, utcnow
from hivemem.schemas import (
    MemorizeResult,
    MemoryCreate,
    MemoryPublic,
    RecallRequest,
    RecallResponse,
    RecallResult,
)
from hivemem.scope import recall_scopes
from search import SearchFilter, Store, open_store
from search.recall import Recaller, RecallParams
from workers.embed import load_embedder
from workers.runner import InProcessRunner

__all__ = ["Caller", "MemoryService"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling and where they work: the principal and the scope used when none is given."""

    principal: str = "local"
    default_scope: str = GLOBAL_SCOPE


class MemoryService:
    """memorize / remember / get / forget over one store, one embedder and one job runner."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.runner = InProcessRunner(store, embedder)
        self.recaller = Recaller(store, embedder, RecallParams.from_settings(settings))

    @classmethod
    def from_settings(cls, settings: Settings, embedder: Embedder | None = None) -> MemoryService:
        """Open the configured store with the configured embedder (loaded lazily)."""
        embedder = embedder or load_embedder(settings)
        store = open_store(
            settings.resolved_store_url(), embedding_model=embedder.model_id, dimension=embedder.dimension
        )
        return cls(settings, store, embedder)

    def with_mode(self, mode: RetrievalMode) -> None:
        """Switch which recall legs run (benchmarks and diagnostics)."""
        self.recaller.params = RecallParams.from_settings(self.settings, mode)

    def _new_memory(self, request: MemoryCreate, caller: Caller) -> Memory:
        scope = caller.default_scope if request.scope is None else request.scope
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
        )

    def memorize(self, request: MemoryCreate, caller: Caller = Caller()) -> MemorizeResult:
        """Store a memory, or reinforce the identical one already in its scope."""
        resolution = self.runner.memorize(self._new_memory(request, caller))
        return MemorizeResult(id=resolution.memory.id, outcome=resolution.outcome)

    def memorize_many(self, requests: list[MemoryCreate], caller: Caller = Caller()) -> list[MemorizeResult]:
        """Bulk memorize with batched embedding; same outcomes as one call per memory."""
        resolutions = self.runner.memorize_many([self._new_memory(r, caller) for r in requests])
        return [MemorizeResult(id=r.memory.id, outcome=r.outcome) for r in resolutions]

    def remember(self, request: RecallRequest, caller: Caller = Caller(), *, reinforce: bool = True) -> RecallResponse:
        """Recall by meaning in the caller's scope plus global.

        What is returned is reinforced (access count, last access) by a background job, unless
        ``reinforce`` is False: internal searches (benchmarks, resolution) must not skew decay.
        """
        scope = caller.default_scope if request.scope is None else request.scope
        where = SearchFilter(
            scopes=recall_scopes(scope),
            memory_types=tuple(request.memory_types or ()),
            tags=tuple(request.tags or ()),
            created_after=request.created_after,
            created_before=request.created_before,
        )
        hits = self.recaller.recall(
            request.queries(),
            where,
            limit=request.limit or self.settings.default_limit,
            now=utcnow(),
            min_relevance=request.min_relevance,
        )
        if reinforce:
            self.runner.record_access([h.memory.id for h in hits])
        return RecallResponse(results=[RecallResult.of(h, explain=request.explain) for h in hits])

    def get(self, memory_id: str) -> MemoryPublic:
        """One memory by id. Raises ``MemoryNotFoundError``."""
        return MemoryPublic.of(self.store.get(memory_id))

    def forget(self, memory_id: str, *, confirm: bool, caller: Caller = Caller()) -> MemoryPublic:
        """Delete a memory for good, with an audit record. Raises ``ConfirmationRequired`` without confirm."""
        if not confirm:
            raise ConfirmationRequired(
                "forget deletes a memory for good: call again with confirm=true. "
                "Old memories fade on their own; forget only what is wrong or harmful."
            )
        removed = self.store.delete(memory_id)
        self.store.audit(
            AuditEvent(
                action="forget",
                memory_id=removed.id,
                scope=removed.scope,
                author=caller.principal,
                detail={"title": removed.title, "content_hash": removed.content_hash},
            )
        )
        return MemoryPublic.of(removed)

    def warm_up(self) -> None:
        """Load the embedding model now, so the first request doesn't pay for it."""
        self.embedder.embed_queries(["warm up"])

    def ready(self) -> dict[str, bool]:
        """Readiness of each dependency: the store answers, the embedder is usable."""
        checks = {"store": False, "embedder": False}
        with suppress(Exception):
            self.store.count([GLOBAL_SCOPE])
            checks["store"] = True
        with suppress(Exception):
            checks["embedder"] = self.embedder.dimension > 0
        return checks

    def close(self) -> None:
        """Finish background jobs and close the store."""
        self.runner.close()
        self.store.close()
