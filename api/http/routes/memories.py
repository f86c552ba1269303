"""REST: memorize, remember, get and forget under /v1."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response

from api.http.deps import CallerDep, ServiceDep
from hivemem.answers import (
    AuditPublic,
    Briefing,
    BulkMemorizeResult,
    ConsolidationPublic,
    HandoffPublic,
    MemorizeAccepted,
    MemorizeResult,
    MemoryPublic,
    MemoryStatus,
    RecallResponse,
    SleepResult,
    UndoResult,
)
from hivemem.audit import AuditAction
from hivemem.audit_schemas import MAX_AUDIT_LIMIT, AuditRequest
from hivemem.forget_schemas import BulkForgetAnswer, BulkForgetRequest
from hivemem.schemas import (
    BulkMemorizeRequest,
    HandoffSave,
    MemoryCreate,
    PromoteRequest,
    RecallRequest,
    ScopeName,
    SleepRequest,
)

__all__ = ["DATE_TIME", "ScopeQuery", "router"]

# One audit action, or several joined by commas (a query parameter may not repeat).
_ONE_ACTION = f"({'|'.join(get_args(AuditAction))})"
_ACTION_LIST = f"^{_ONE_ACTION}(,{_ONE_ACTION})*$"
# A query parameter read as RFC 3339 (hivemem.schemas.Timestamp), so published as a date-time.
DATE_TIME: dict[str, Any] = {"format": "date-time"}

ScopeQuery = Annotated[
    ScopeName | None,
    Query(description="The project scope to look in (plus global); default: the caller's, else global."),
]


router = APIRouter(prefix="/v1", tags=["memories"])
"""The /v1 memory routes."""


@router.post(
    "/memories",
    status_code=201,
    response_model=MemorizeResult | MemorizeAccepted,
    responses={202: {"model": MemorizeAccepted, "description": "Queued; poll `GET /v1/jobs/{job_id}`."}},
)
def memorize(body: MemoryCreate, service: ServiceDep, caller: CallerDep, response: Response) -> object:
    """Store a memory. `outcome` is `stored` for a new memory, `reinforced` when the same
    content was already in the scope (its id is returned); `scope` says where it is. Scope
    defaults to the `X-Hivemem-Scope` header, else global (`""`). With workers, a job not
    done within `HIVEMEM_MEMORIZE_WAIT_S` answers 202 `{id, scope, job_id, state}`."""
    result = service.memorize(body, caller)
    if isinstance(result, MemorizeAccepted):
        response.status_code = 202
    return result


@router.post(
    "/memories/bulk",
    status_code=201,
    response_model=BulkMemorizeResult,
    response_model_exclude_none=True,
    responses={202: {"model": BulkMemorizeResult, "description": "Queued; poll `GET /v1/jobs/{job_id}`."}},
)
def memorize_bulk(
    body: BulkMemorizeRequest, service: ServiceDep, caller: CallerDep, response: Response
) -> BulkMemorizeResult:
    """Store up to 1,000 memories as one job (batched embedding, the low-priority `bulk` queue).
    201 with every outcome when done in time, else 202 with the job id and the ids assigned."""
    result = service.memorize_bulk(body.memories, caller)
    if result.results is None:
        response.status_code = 202
    return result


@router.post("/remember", response_model=RecallResponse, response_model_exclude_none=True)
def remember(body: RecallRequest, service: ServiceDep, caller: CallerDep) -> RecallResponse:
    """Recall memories by meaning (BM25 + vectors, fused) in the scope and global, best first;
    `scopes` names the scopes searched."""
    return service.remember(body, caller)


# Memory ids are UUIDs (the gateway assigns them): routing only takes those, so that
# `/v1/memories/bulk` is not also "the memory with id bulk".
@router.get("/memories/{memory_id:uuid}", response_model=MemoryPublic)
def get_memory(memory_id: UUID, service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> MemoryPublic:
    """One memory by id, if it is in the scope (or the caller's) or global; 404 otherwise."""
    return service.get(str(memory_id), caller, scope=scope)


@router.get("/audit", response_model=list[AuditPublic])
def audit(
    service: ServiceDep,
    caller: CallerDep,
    memory_id: Annotated[
        str | None,
        Query(min_length=1, max_length=64, description="One memory's (or token's) records; it may be gone."),
    ] = None,
    scope: ScopeQuery = None,
    action: Annotated[
        str | None,
        Query(
            max_length=200,
            pattern=_ACTION_LIST,
            description=f"Only these actions, comma-separated: {', '.join(get_args(AuditAction))}.",
        ),
    ] = None,
    principal: Annotated[
        str | None, Query(min_length=1, max_length=64, description="Only what this principal did or was refused.")
    ] = None,
    since: Annotated[
        str | None, Query(description="RFC 3339; records at or after it.", json_schema_extra=DATE_TIME)
    ] = None,
    until: Annotated[str | None, Query(description="RFC 3339; records before it.", json_schema_extra=DATE_TIME)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_AUDIT_LIMIT)] = 100,
) -> list[AuditPublic]:
    """Audit records, newest first: forgets, merges, supersedes, undos, consolidations, promotions,
    imports, re-embeds, token changes and denied requests, each with its principal, target, time and
    outcome, never memory text or a token. With `memory_id`: that memory's records in the scope (or
    the caller's) and global, for anyone who may read there. Without: the whole log, for an admin on
    `*`. A record's `id` is what `POST /v1/audit/{id}/undo` takes."""
    request = AuditRequest.model_validate(
        {
            "memory_id": memory_id,
            "scope": scope,
            "action": None if action is None else list(dict.fromkeys(action.split(","))),
            "principal": principal,
            "since": since,
            "until": until,
            "limit": limit,
        }
    )
    return service.audit_trail.search(request, caller)


@router.post("/audit/{audit_id}/undo", response_model=UndoResult)
def undo(
    audit_id: Annotated[str, Path(min_length=1, max_length=64)], service: ServiceDep, caller: CallerDep
) -> UndoResult:
    """Undo a merge, a supersede or a consolidation: the memories as they were come back, and the undo is audited.
    404 for an unknown record; 409 for another action or a record already undone."""
    return service.audit_trail.undo(audit_id, caller)


@router.post("/memories/{memory_id:uuid}/consolidate", response_model=ConsolidationPublic | None)
def consolidate(
    memory_id: UUID, service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None
) -> ConsolidationPublic | None:
    """Consolidate a goal's working `achieves` findings under its newest closing note (a memory
    with a `closes` edge to it), or the goal itself: sources muted (`consolidated`, importance
    x 0.2) with `derived_from` edges from the parent; undoable by the audit record. `null` when
    no finding is left. 404 for an unknown goal; 422 for a memory that is not a goal."""
    return service.lifecycle.consolidate_goal(str(memory_id), caller, scope=scope)


@router.post("/memories/{memory_id:uuid}/promote", status_code=201, response_model=MemorizeResult | MemorizeAccepted)
def promote(
    memory_id: UUID,
    body: PromoteRequest,
    service: ServiceDep,
    caller: CallerDep,
    response: Response,
    scope: ScopeQuery = None,
) -> object:
    """Promote a memory (of the scope, or the caller's, e.g. one's personal `user/NAME`) to the
    team scope `to`: a copy with the same text, type, tags and details and the original's author,
    linked to the original by `derived_from` (shown only to those who may read the original);
    audited as `promote`. Needs read where the memory is and write in `to`: 404 for a memory the
    caller cannot read, 403 without write in `to`, 409 when it is already there."""
    result = service.promote(str(memory_id), body, caller, scope=scope)
    if isinstance(result, MemorizeAccepted):
        response.status_code = 202
    return result


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


@router.get("/briefing", response_model=Briefing)
def session_briefing(service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> Briefing:
    """What a session starting in the scope should know, for a client hook to inject: the latest
    handoff, open failures, features not done, the most important decisions and preferences, and
    all of it as one `text` of at most about 1,500 tokens."""
    return service.briefing(caller, scope=scope)


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
    return service.lifecycle.sleep(body, caller)


@router.post("/memories/forget", response_model=BulkForgetAnswer)
def forget_matching(body: BulkForgetRequest, service: ServiceDep, caller: CallerDep) -> BulkForgetAnswer:
    """Forget in bulk, after a preview: the memories of one scope that `query` (its best `limit`
    matches) and/or the filters match. Without `confirm`: a dry run, answering the count, the first
    titles and a `preview_token`. With `confirm: true` and that token: deletes exactly that set
    (each memory audited as a `forget`). 400 without the token, 409 `preview_changed` when the set
    is no longer the preview's (nothing deleted), 403 without admin on the scope, 422 without a query
    or a filter."""
    return service.forget_matching(body, caller)


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
