"""REST: memorize, remember, get and forget under /v1."""

from __future__ import annotations

from fastapi import APIRouter, Query

from api.deps import CallerDep, ServiceDep
from hivemem.schemas import MemorizeResult, MemoryCreate, MemoryPublic, RecallRequest, RecallResponse

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memories"])


@router.post("/memories", status_code=201, response_model=MemorizeResult)
def memorize(body: MemoryCreate, service: ServiceDep, caller: CallerDep) -> MemorizeResult:
    """Store a memory. `outcome` is `stored` for a new memory, `reinforced` when the same
    content was already in the scope (its id is returned). Scope defaults to global (`""`)."""
    return service.memorize(body, caller)


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
