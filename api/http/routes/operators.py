"""REST for operators: list memories a page at a time, edit one, count each scope."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Response

from api.http.deps import CallerDep, ServiceDep
from api.http.routes.memories import DATE_TIME, ScopeQuery
from hivemem.answers import MemoryPublic
from hivemem.listing_schemas import CURSOR_PATTERN, MAX_PAGE, CreatedWindow, MemoryPage, MemoryUpdate, ScopeStats
from hivemem.model import MemoryState, MemoryType

__all__ = ["REDACTED_HEADER", "router"]

router = APIRouter(prefix="/v1", tags=["operators"])

_NAME = Query(min_length=1, max_length=200)
REDACTED_HEADER = "X-Hivemem-Redacted"


@router.get("/memories", response_model=MemoryPage)
def list_memories(
    service: ServiceDep,
    caller: CallerDep,
    scope: ScopeQuery = None,
    memory_type: Annotated[MemoryType | None, Query(alias="type")] = None,
    state: MemoryState | None = None,
    tag: Annotated[str | None, _NAME] = None,
    author: Annotated[str | None, _NAME] = None,
    created_after: Annotated[str | None, Query(json_schema_extra=DATE_TIME)] = None,
    created_before: Annotated[str | None, Query(json_schema_extra=DATE_TIME)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[
        str | None, Query(pattern=CURSOR_PATTERN, description="The `next_cursor` of the page before.")
    ] = None,
) -> MemoryPage:
    """The memories of the scope (default: the caller's; global is `""`), newest first, in every
    state unless `state` names one, narrowed by type, tag, author and creation time. `next_cursor`
    (null on the last page) fetches the next page as `cursor`. 403 without read on the scope."""
    window = CreatedWindow.model_validate({"created_after": created_after, "created_before": created_before})
    return service.operators.page(
        caller,
        scope=scope,
        memory_type=memory_type,
        state=state,
        tag=tag,
        author=author,
        created_after=window.created_after,
        created_before=window.created_before,
        limit=limit,
        cursor=cursor,
    )


@router.patch("/memories/{memory_id:uuid}", response_model=MemoryPublic)
def update_memory(
    memory_id: UUID,
    body: MemoryUpdate,
    service: ServiceDep,
    caller: CallerDep,
    response: Response,
    scope: ScopeQuery = None,
) -> MemoryPublic:
    """Edit a memory's title, content, importance or tags (one's own with write on its scope,
    anyone's with admin); a new title or content is embedded again; audited (`update`). 404 for a
    memory the caller cannot read, 409 when the new content is another memory's in the scope, 422
    (`secret_refused`) for a credential in the new text; under the `redact` secret policy the
    credential is replaced instead, and `X-Hivemem-Redacted` names each (`field:kind`, comma list)."""
    memory, redacted = service.operators.update(str(memory_id), body, caller, scope=scope)
    if redacted:
        response.headers[REDACTED_HEADER] = ",".join(f"{r.field}:{r.kind}" for r in redacted)
    return memory


@router.post("/memories/{memory_id:uuid}/verify", response_model=MemoryPublic)
def verify_memory(memory_id: UUID, service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> MemoryPublic:
    """Say that a memory still holds: its `verified_at` becomes now, which clears a `[STALE? …]`
    label in recall (write on its scope; audited `verify`). 404 for a memory the caller cannot read."""
    return service.operators.verify(str(memory_id), caller, scope=scope)


@router.get("/scopes", response_model=list[ScopeStats])
def scope_stats(service: ServiceDep, caller: CallerDep) -> list[ScopeStats]:
    """Every scope holding memories or documents that the caller may read, with its memories'
    counts by type and by state, and its indexed documents and their chunks."""
    return service.operators.scope_stats(caller)
