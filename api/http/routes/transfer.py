"""Export and import over REST: a scope's memories, relations and knowledge as JSON lines, and back."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from api.errors import status_of
from api.http.deps import CallerDep, ServiceDep
from api.http.routes.memories import ScopeQuery
from api.services.transfer import ImportResult
from hivemem.errors import HivememError, ValidationError
from hivemem.transfer import export_file_lines

__all__ = ["router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", tags=["export"])

NDJSON = "application/x-ndjson"
_FILE = {"content": {NDJSON: {"schema": {"type": "string", "description": "The export file, one JSON record a line."}}}}


@router.get("/export", response_class=Response, responses={200: _FILE})
def export(service: ServiceDep, caller: CallerDep, scope: ScopeQuery = None) -> Response:
    """The export file of `scope` (default: every scope the caller may read): a header line, then
    every memory (all states, with validity and provenance), the relations between them, and the
    knowledge sources with their chunks, one JSON record a line, in a fixed order. No vectors: the
    importing store embeds again. 403 for a scope the caller may not read. Sent as it is read from
    the store (chunked): a failure halfway (a damaged database) ends the body with one line
    `{"kind": "error", "error": CODE, "message": …}` instead of the rest, so a client tells half a
    file from a whole one, and an import of such a file is refused at that line."""
    lines = service.transfer.export(caller, None if scope is None else [scope])  # 403 before any line
    return StreamingResponse(_ending_in_error_line(lines), media_type=NDJSON)


def _ending_in_error_line(lines: Iterator[str]) -> Iterator[str]:
    """The export's lines, each with its line feed; on a failure, an error line and the end."""
    try:
        for line in lines:
            yield line + "\n"
    except HivememError as exc:
        log.error("the export stopped halfway: %s", exc)
        yield json.dumps({"kind": "error", "error": status_of(exc)[1], "message": str(exc)}) + "\n"


@router.post(
    "/import",
    response_model=ImportResult,
    # Declared as text: any content type is read the same (an export file is JSON lines, `application/x-ndjson`).
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "An export file: JSON lines, as `GET /v1/export` or `hivemem export` write it.",
            # At least the header line: an empty body is no export file.
            "content": {"text/plain": {"schema": {"type": "string", "minLength": 1}}},
        }
    },
)
async def import_file(request: Request, service: ServiceDep, caller: CallerDep) -> ImportResult:
    """Import an export file (the body, JSON lines; sent as `application/x-ndjson` or `text/plain`):
    admin on every scope it writes to.
    The whole file is checked first: a bad line (422, naming it), a memory whose content its scope
    holds under another id (422) or a scope without admin (403) writes nothing. Memories and chunks
    are embedded with this server's model and written by id (importing a file twice changes nothing
    more); the import is audited. Larger files: `hivemem import` on the server's machine."""
    from starlette.concurrency import run_in_threadpool

    body = await request.body()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("the body is not UTF-8 text", field="body") from None
    return await run_in_threadpool(service.transfer.import_lines, export_file_lines(text), caller)
