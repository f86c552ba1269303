"""REST: memorize, remember, get and forget under /v1."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from api.deps import CallerDep, ServiceDep
from hivemem.schemas import (
    BulkMemorizeRequest,
    BulkMemorizeResult,
    MemorizeAccepted,
    MemorizeResult,
    MemoryCreate,
    MemoryPublic,
    RecallRequest,
    RecallResponse,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memories"])


@router.post(
    "/memories",
    status_code=201,
    response_model=MemorizeResult | MemorizeAccepted,
    responses={202: {"model": MemorizeAccepted, "description": "Queued; poll `GET /v1/jobs/{job_id}`."}},
)
def memorize(body: MemoryCreate, service: ServiceDep, caller: CallerDep, response: Response) -> object:
    """Store a memory. `outcome` is `stored` for a new memory, `reinforced` when the same
    content was already in the scope (its id is returned). Scope defaults to global (`""`).
    With workers, a job not done within `HIVEMEM_MEMORIZE_WAIT_S` answers 202 `{id, job_id}`."""
    result = service.memorize(body, caller)
    if isinstance(result, MemorizeAccepted):
        response.status_code = 202
    return result


@router.post(
    "/memories/bulk",
    status_code=201,
    response_model=BulkMemorizeResult,
    response_model_exclude_none=True,
    responses={202: {"description": "Queued; poll `GET /v1/jobs/{job_id}`."}},
)
def memorize_bulk(
    body: BulkMemorizeRequest, service: ServiceDep, caller: CallerDep, response: Response
) -> BulkMemorizeResult:
    """Store up to 1,000 memories as one job (batched embedding, the low-priority `ingest` queue).
    201 with every outcome when done in time, else 202 with the job id and the ids assigned."""
    result = service.memorize_bulk(body.memories, caller)
    if result.results is None:
        response.status_code = 202
    return result


@router.post("/remember", response_model=RecallResponse, response_model_exclude_none=True)
def remember(body: RecallRequest, service: ServiceDep, caller: CallerDep) -> RecallResponse:
    """Recall memories by meaning (BM25 + vectors, fused) in the scope and global, best first."""
    return service.remember(body, caller)


@router.get("/memories/{memory_id}", response_model=MemoryPublic)
def get_memory(memory_id: str, service: ServiceDep) -> MemoryPublic:
    """One memory by id; 404 when there is none."""
    return service.get(memory_id)


@router.delete("/memories/{memory_id}", response_model=MemoryPublic)
def forget(
    memory_id: str,
    service: ServiceDep,
    caller: CallerDep,
    confirm: bool = Query(default=False, description="Must be true: forgetting cannot be undone."),
) -> MemoryPublic:
    """Delete a memory for good (audited). 400 without `?confirm=true`, 404 when there is none."""
    return service.forget(memory_id, confirm=confirm, caller=caller)
