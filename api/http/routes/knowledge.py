"""REST: knowledge under /v1/knowledge, the twin of the MCP ``knowledge`` tool and the CLI.

Over HTTP a local path is read only inside ``HIVEMEM_KNOWLEDGE_ALLOWED_PATHS``; a client with a
document of its own uploads it (``PUT /v1/knowledge/documents``) or stores its text.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api.http.deps import CallerDep, ServiceDep
from hivemem.knowledge_schemas import (
    IngestAccepted,
    IngestRequest,
    KnowledgeAccepted,
    KnowledgeDeleted,
    KnowledgeDeleteRequest,
    KnowledgeMatchRequest,
    KnowledgeMatchResponse,
    KnowledgePruned,
    KnowledgePruneRequest,
    KnowledgeReadRequest,
    KnowledgeReadResponse,
    KnowledgeSearchRequest,
    KnowledgeSearchResponse,
    KnowledgeStored,
    KnowledgeStoreRequest,
    SourcePage,
)
from hivemem.schemas import ScopeName
from workers.documents import EXTENSIONS
from workers.documents.sources import FileAccess

__all__ = ["router"]

router = APIRouter(prefix="/v1/knowledge", tags=["knowledge"])

# Documents one page lists at most: a dashboard table, or a program's batch (about 300 KB of JSON).
MAX_SOURCES_PAGE = 1000

ScopeQuery = Annotated[
    ScopeName | None, Query(description="The project scope (plus global for reads); default: the caller's.")
]


def _access(service: ServiceDep) -> FileAccess:
    return FileAccess.over_http(service.settings)


@router.post("/search", response_model=KnowledgeSearchResponse)
def search(body: KnowledgeSearchRequest, service: ServiceDep, caller: CallerDep) -> KnowledgeSearchResponse:
    """Chunks of indexed documents for `query`, best first (BM25 + vectors, fused), in the scope and
    global; with `source`, of that one document, indexed first when new or changed."""
    return service.knowledge.search(body, caller, _access(service))


@router.post("/read", response_model=KnowledgeReadResponse)
def read(body: KnowledgeReadRequest, service: ServiceDep, caller: CallerDep) -> KnowledgeReadResponse:
    """A document's full text from `offset`, at most `limit` characters; `next_offset` pages on."""
    return service.knowledge.read(body, caller, _access(service))


@router.post("/match", response_model=KnowledgeMatchResponse)
def match(body: KnowledgeMatchRequest, service: ServiceDep, caller: CallerDep) -> KnowledgeMatchResponse:
    """Regular-expression matches in indexed chunks, capped, within a time budget (`complete` says
    whether the scan finished)."""
    return service.knowledge.match(body, caller, _access(service))


def _any_case(text: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in text)


# An upload's name as the schema states it: no folders or control characters, and an extension a
# reader takes (ECMA regular expressions have no flags, hence each letter in both cases).
UPLOAD_NAME_PATTERN = r"^[^\x00-\x1f\x7f/\\]*\.(?:" + "|".join(_any_case(ext[1:]) for ext in sorted(EXTENSIONS)) + ")$"

_LATER: dict[int | str, dict[str, Any]] = {
    202: {"model": KnowledgeAccepted, "description": "Too large to index within the request: the job doing it."}
}


def _answered(outcome: KnowledgeStored | KnowledgeAccepted, response: Response) -> KnowledgeStored | KnowledgeAccepted:
    if isinstance(outcome, KnowledgeAccepted):
        response.status_code = 202
    return outcome


@router.post("/store", status_code=201, response_model=KnowledgeStored | KnowledgeAccepted, responses=_LATER)
def store(
    body: KnowledgeStoreRequest, response: Response, service: ServiceDep, caller: CallerDep
) -> KnowledgeStored | KnowledgeAccepted:
    """Index raw text under `key` (source `key:KEY`) in the caller's scope, replacing what it held:
    201 once indexed; over 64 KiB, 202 with the job indexing it (`GET /v1/jobs/{id}`)."""
    return _answered(service.knowledge.store_text(body, caller), response)


@router.post("/delete", response_model=KnowledgeDeleted)
def delete(body: KnowledgeDeleteRequest, service: ServiceDep, caller: CallerDep) -> KnowledgeDeleted:
    """Remove an indexed document and its chunks; 404 when the scope holds none by that name."""
    return service.knowledge.delete(body, caller, _access(service))


@router.post("/prune", response_model=KnowledgePruned)
def prune(body: KnowledgePruneRequest, service: ServiceDep, caller: CallerDep) -> KnowledgePruned:
    """Remove the documents indexed from these folders (inside the allowed folders) whose files are
    gone; `dry_run` lists them and removes nothing. 422 for a name that is not a folder now."""
    return service.knowledge.prune(body, caller, _access(service))


@router.post("/ingest", status_code=202, response_model=IngestAccepted)
def ingest(body: IngestRequest, service: ServiceDep, caller: CallerDep) -> IngestAccepted:
    """Start indexing files and folders (inside the allowed folders) and URLs, one job item per
    document, in the background; `GET /v1/jobs/{id}` reports its progress and, when done, each
    document's outcome (`indexed`, `unchanged`, or `failed` with the reason). `left_out` counts
    the folders' files of formats hivemem does not read, by extension."""
    return service.knowledge.ingest_job(body, caller, _access(service))


@router.get("/sources", response_model=SourcePage)
def sources(
    service: ServiceDep,
    caller: CallerDep,
    scope: ScopeQuery = None,
    offset: Annotated[int, Query(ge=0, description="The first document of the page.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_SOURCES_PAGE, description="Documents in the page.")] = 100,
) -> SourcePage:
    """The documents indexed in the scope and global, by scope then uri, a page at a time: `total`
    in all, and `next_offset` (null on the last page) fetches the next page as `offset`."""
    return service.knowledge.sources_page(caller, scope, offset, limit)


@router.put("/documents", status_code=201, response_model=KnowledgeStored | KnowledgeAccepted, responses=_LATER)
async def upload(
    request: Request,
    response: Response,
    service: ServiceDep,
    caller: CallerDep,
    name: Annotated[
        str,
        Query(
            min_length=1,
            max_length=255,
            pattern=UPLOAD_NAME_PATTERN,
            description="File name, without folders or control characters, ending in an extension hivemem reads "
            "(it names the format).",
        ),
    ],
    scope: ScopeQuery = None,
) -> KnowledgeStored | KnowledgeAccepted:
    """Upload one document (the raw bytes as the body) and index it as `upload:NAME` in the caller's
    scope: 201 once indexed; over 64 KiB, 202 with the job indexing it (`GET /v1/jobs/{id}`)."""
    data = await request.body()
    # Parsing and embedding block: they run on the threadpool, not on the event loop.
    return _answered(await run_in_threadpool(service.knowledge.upload, name, data, caller, scope), response)
