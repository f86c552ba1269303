"""REST: memorize, remember, get and forget under /v1."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel

from api.deps import CallerDep, ServiceDep
from hivemem.schemas import (
    AuditPublic,
    BulkMemorizeRequest,
    BulkMemorizeResult,
    ConsolidationPublic,
    HandoffPublic,
    HandoffSave,
    MemorizeAccepted,
    MemorizeResult,
    MemoryCreate,
    MemoryPublic,
    MemoryStatus,
    RecallRequest,
    RecallResponse,
    RequestSchemas,
    ScopeName,
    SleepRequest,
    SleepResult,
    UndoResult,
)

__all__ = ["build_router"]

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])

ScopeQuery = Annotated[
    ScopeName | None,
    Query(description="The project scope to look in (plus global); default: the caller's, else global."),
]


def _with_body(endpoint: Endpoint, model: type[BaseModel]) -> Endpoint:
    """``endpoint`` with its ``body`` parameter typed as ``model``.

    FastAPI reads the body model from the signature; the models carry the configured limits
    (:func:`hivemem.schemas.request_schemas`), so they are only known when the app is built.
    """
    signature = inspect.signature(endpoint)
    parameters = [p.replace(annotation=model) if p.name == "body" else p for p in signature.parameters.values()]
    endpoint.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return endpoint


def build_router(schemas: RequestSchemas) -> APIRouter:
    """The /v1 memory routes, validating bodies with ``schemas``."""
    router = APIRouter(prefix="/v1", tags=["memories"])

    def memorize(body: MemoryCreate, service: ServiceDep, caller: CallerDep, response: Response) -> object:
        """Store a memory. `outcome` is `stored` for a new memory, `reinforced` when the same
        content was already in the scope (its id is returned); `scope` says where it is. Scope
        defaults to the `X-Hivemem-Scope` header, else global (`""`). With workers, a job not
        done within `HIVEMEM_MEMORIZE_WAIT_S` answers 202 `{id, scope, job_id, state}`."""
        result = service.memorize(body, caller)
        if isinstance(result, MemorizeAccepted):
            response.status_code = 202
        return result

    def memorize_bulk(
        body: BulkMemorizeRequest, service: ServiceDep, caller: CallerDep, response: Response
    ) -> BulkMemorizeResult:
        """Store up to 1,000 memories as one job (batched embedding, the low-priority `bulk` queue).
        201 with every outcome when done in time, else 202 with the job id and the ids assigned."""
        result = service.memorize_bulk(body.memories, caller)
        if result.results is None:
            response.status_code = 202
        return result

    def remember(body: RecallRequest, service: ServiceDep, caller: CallerDep) -> RecallResponse:
        """Recall memories by meaning (BM25 + vectors, fused) in the scope and global, best first;
        `scopes` names the scopes searched."""
        return service.remember(body, caller)

    router.post(
        "/memories",
        status_code=201,
        response_model=MemorizeResult | MemorizeAccepted,
        responses={202: {"model": MemorizeAccepted, "description": "Queued; poll `GET /v1/jobs/{job_id}`."}},
    )(_with_body(memorize, schemas.memory_create))
    router.post(
        "/memories/bulk",
        status_code=201,
        response_model=BulkMemorizeResult,
        response_model_exclude_none=True,
        responses={202: {"model": BulkMemorizeResult, "description": "Queued; poll `GET /v1/jobs/{job_id}`."}},
    )(_with_body(memorize_bulk, schemas.bulk_memorize))
    router.post("/remember", response_model=RecallResponse, response_model_exclude_none=True)(
        _with_body(remember, schemas.recall)
    )

    # Memory ids are UUIDs (the gateway assigns them): routing only takes those, so that
    # `/v1/memories/bulk` is not also "the memory with id bulk".
    @router.get("/memories/{memory_id:uuid}", response_model=MemoryPublic)
    def get_memory(memory_id: UUID, service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> MemoryPublic:
        """One memory by id, if it is in the scope (or the caller's) or global; 404 otherwise."""
        return service.get(str(memory_id), caller, scope=scope)

    @router.get("/audit", response_model=list[AuditPublic])
    def memory_audit(
        memory_id: Annotated[UUID, Query(description="The memory whose records to list (it may be forgotten).")],
        service: ServiceDep,
        caller: CallerDep,
        scope: ScopeQuery = None,
    ) -> list[AuditPublic]:
        """The audit records of one memory (forget, merge, supersede, undo), oldest first, of the scope
        (or the caller's) and global; each record's `id` is what `POST /v1/audit/{id}/undo` takes."""
        return service.audit_log(str(memory_id), caller, scope=scope)

    @router.post("/audit/{audit_id}/undo", response_model=UndoResult)
    def undo(
        audit_id: Annotated[str, Path(min_length=1, max_length=64)], service: ServiceDep, caller: CallerDep
    ) -> UndoResult:
        """Undo a merge, a supersede or a consolidation: the memories as they were come back, and the undo is audited.
        404 for an unknown record; 409 for another action or a record already undone."""
        return service.undo(audit_id, caller)

    @router.post("/memories/{memory_id:uuid}/consolidate", response_model=ConsolidationPublic | None)
    def consolidate(
        memory_id: UUID, service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None
    ) -> ConsolidationPublic | None:
        """Consolidate a goal's working `achieves` findings under its newest closing note (a memory
        with a `closes` edge to it), or the goal itself: sources muted (`consolidated`, importance
        x 0.2) with `derived_from` edges from the parent; undoable by the audit record. `null` when
        no finding is left. 404 for an unknown goal; 422 for a memory that is not a goal."""
        return service.consolidate_goal(str(memory_id), caller, scope=scope)

    @router.post("/handoff", status_code=201, response_model=MemorizeResult | MemorizeAccepted)
    def save_handoff(body: HandoffSave, service: ServiceDep, caller: CallerDep, response: Response) -> object:
        """Save a session handoff (summary, completed, in_progress, blocked, next_steps) as a `handoff`
        memory of the scope; 202 with its job when workers have not finished it in time."""
        result = service.save_handoff(body, caller)
        if isinstance(result, MemorizeAccepted):
            response.status_code = 202
        return result

    @router.get("/handoff", response_model=HandoffPublic | None)
    def load_handoff(service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> HandoffPublic | None:
        """The latest handoff of the scope (or the caller's), or `null`."""
        return service.load_handoff(caller, scope=scope)

    @router.get("/status", response_model=MemoryStatus)
    def memory_status(service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> MemoryStatus:
        """Where the scope's memory stands: counts by type and state, working failures by component and
        severity, features not done, the last sleep, and the jobs waiting by queue."""
        return service.status(caller, scope=scope)

    @router.post("/sleep", response_model=SleepResult)
    def sleep(body: SleepRequest, service: ServiceDep, caller: CallerDep) -> SleepResult:
        """Sleep-consolidate the scope now: clusters of near-identical working memories of the last
        days become one insight each, the sources muted under it (undoable). `dry_run` reports the
        clusters and writes nothing."""
        return service.sleep(body, caller)

    @router.delete("/memories/{memory_id:uuid}", response_model=MemoryPublic)
    def forget(
        memory_id: UUID,
        service: ServiceDep,
        caller: CallerDep,
        confirm: Annotated[Literal["true"], Query(description="Must be `true`: forgetting cannot be undone.")],
        scope: ScopeQuery = None,
    ) -> MemoryPublic:
        """Delete a memory for good (audited). 400 without `?confirm=true`; 404 when there is none in
        the scope (or the caller's) or global."""
        return service.forget(str(memory_id), confirm=confirm == "true", caller=caller, scope=scope)

    return router
