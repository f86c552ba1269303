"""The knowledge interface's requests and answers, shared by REST, MCP and the CLI.

Every request field carries the limit the server enforces; unknown fields are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from hivemem.answers import JobPublic
from hivemem.knowledge import DocumentFormat, KnowledgeSource
from hivemem.schemas import QueryText, ScopeName, _TextRule, _whole_number

__all__ = [
    "ChunkCitation",
    "IngestAccepted",
    "IngestFailure",
    "IngestReport",
    "IngestRequest",
    "KnowledgeAccepted",
    "KnowledgeDeleteRequest",
    "KnowledgeDeleted",
    "KnowledgeMatch",
    "KnowledgeMatchRequest",
    "KnowledgeMatchResponse",
    "KnowledgePruneRequest",
    "KnowledgePruned",
    "KnowledgeReadRequest",
    "KnowledgeReadResponse",
    "KnowledgeSearchRequest",
    "KnowledgeSearchResponse",
    "KnowledgeStoreRequest",
    "KnowledgeStored",
    "ReadSection",
    "SourcePage",
    "SourcePublic",
]

_STRICT = ConfigDict(extra="forbid")
_TEXT_1 = _TextRule(1)
MAX_STORED_TEXT = 100_000
MAX_PATTERN = 500
MAX_INGEST_PATHS = 1000

SourceRef = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=4096,
        json_schema_extra=_TEXT_1.schema(),
        description="A file path, an http(s) URL, `key:NAME` for text stored under a key, or `repo:PATH` for a "
        "file of the project's checkout (how its documents are named).",
    ),
    AfterValidator(_TEXT_1),
]
Key = Annotated[
    StrictStr,
    Field(
        min_length=1, max_length=200, json_schema_extra=_TEXT_1.schema(), description="The name text is stored under."
    ),
    AfterValidator(_TEXT_1),
]
ChunkLimit = Annotated[StrictInt, Field(ge=1, le=50), BeforeValidator(_whole_number)]


class KnowledgeSearchRequest(BaseModel):
    """Search indexed documents (and, with ``source``, one document, indexed first when new or changed)."""

    model_config = _STRICT

    query: QueryText
    source: SourceRef | None = None
    scope: ScopeName | None = None
    limit: ChunkLimit = 10


class KnowledgeReadRequest(BaseModel):
    """Read a document's full text, a page at a time."""

    model_config = _STRICT

    source: SourceRef
    scope: ScopeName | None = None
    offset: Annotated[StrictInt, Field(ge=0, le=10**9), BeforeValidator(_whole_number)] = 0
    limit: Annotated[StrictInt, Field(ge=1, le=1_000_000), BeforeValidator(_whole_number)] | None = None


class KnowledgeMatchRequest(BaseModel):
    """A regular expression over the chunks of indexed documents."""

    model_config = _STRICT

    pattern: Annotated[StrictStr, Field(min_length=1, max_length=MAX_PATTERN)]
    source: SourceRef | None = None
    scope: ScopeName | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=1000), BeforeValidator(_whole_number)] = 50
    ignore_case: StrictBool = False


class KnowledgeStoreRequest(BaseModel):
    """Raw text to index under a key in the caller's scope (replacing what the key held)."""

    model_config = _STRICT

    key: Key
    text: Annotated[
        StrictStr,
        Field(min_length=1, max_length=MAX_STORED_TEXT, json_schema_extra=_TEXT_1.schema()),
        AfterValidator(_TEXT_1),
    ]
    title: Annotated[StrictStr, Field(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")] = ""
    scope: ScopeName | None = None


class KnowledgeDeleteRequest(BaseModel):
    """Remove an indexed document (a key's text, a file or a URL) and its chunks."""

    model_config = _STRICT

    source: SourceRef
    scope: ScopeName | None = None


class IngestRequest(BaseModel):
    """Index files, folders (walked) and files listing URLs."""

    model_config = _STRICT

    paths: Annotated[list[SourceRef], Field(min_length=1, max_length=MAX_INGEST_PATHS)]
    scope: ScopeName | None = None
    glob: Annotated[list[Annotated[StrictStr, Field(min_length=1, max_length=200)]], Field(max_length=50)] = Field(
        default_factory=list, description="Only files matching one of these patterns (e.g. `*.pdf`); default all."
    )
    force: StrictBool = False


FolderPath = Annotated[
    StrictStr,
    Field(min_length=1, max_length=4096, json_schema_extra=_TEXT_1.schema(), description="A folder's path."),
    AfterValidator(_TEXT_1),
]


class KnowledgePruneRequest(BaseModel):
    """Remove the documents indexed from folders whose files are gone (deleted, or moved away)."""

    model_config = _STRICT

    folders: Annotated[list[FolderPath], Field(min_length=1, max_length=MAX_INGEST_PATHS)]
    scope: ScopeName | None = None
    dry_run: StrictBool = Field(default=False, description="List what would be removed; remove nothing.")


class ChunkCitation(BaseModel):
    """A found chunk with what a citation needs."""

    source: str
    scope: str
    title: str
    section: list[str]
    page: int | None
    start: int
    end: int
    score: float
    text: str


class KnowledgeSearchResponse(BaseModel):
    results: list[ChunkCitation]
    indexed: str | None = Field(
        default=None,
        description="What became of `source` when it was given: `indexed`, `unchanged`, or `stored` (its indexed "
        "copy was searched: this caller may not index it, or it cannot be read now).",
    )


class ReadSection(BaseModel):
    """Where a heading path (and for a PDF a page) begins in the document's text."""

    start: int
    section: list[str]
    page: int | None


class KnowledgeReadResponse(BaseModel):
    source: str
    title: str
    format: DocumentFormat
    text: str
    offset: int
    next_offset: int | None
    total_chars: int
    sections: list[ReadSection] = Field(
        default_factory=list,
        description="The headings of this page: the one in force at `offset`, then each that begins "
        "before the page ends (`start` is an offset in the document's text, as chunks' are).",
    )
    stored: bool = Field(
        default=False,
        description="True when the text is the indexed copy (text stored under a key, an upload, or a "
        "document that cannot be read now: not allowed, gone, unreachable), not the file or URL read now.",
    )


class KnowledgeMatch(BaseModel):
    source: str
    title: str
    section: list[str]
    page: int | None
    start: int
    end: int
    match: str
    context: str


class KnowledgeMatchResponse(BaseModel):
    matches: list[KnowledgeMatch]
    complete: bool = Field(description="False when the result cap or the time budget stopped the scan.")
    scanned_chunks: int


class KnowledgeStored(BaseModel):
    source: str
    scope: str
    chunks: int
    status: Literal["indexed", "unchanged", "failed"]
    redacted: int = Field(
        default=0, description="Credentials replaced by `[REDACTED:kind]` before the text was indexed."
    )


class KnowledgeAccepted(JobPublic):
    """A document too large to index within its request: the job indexing it in the background
    (``GET /v1/jobs/{id}`` has its outcome once done), and where it will be."""

    source: str
    scope: str


class KnowledgeDeleted(BaseModel):
    source: str
    scope: str
    chunks: int


class KnowledgePruned(BaseModel):
    """What a prune removed from one scope (or, dry, would remove)."""

    scope: str
    dry_run: bool
    removed: list[KnowledgeDeleted] = Field(description="The documents whose files are gone, each with its chunks.")


class SourcePublic(BaseModel):
    uri: str
    scope: str
    title: str
    format: DocumentFormat
    size: int
    chunk_count: int
    fetched_at: datetime
    indexed_at: datetime | None
    last_error: str | None

    @classmethod
    def of(cls, source: KnowledgeSource) -> SourcePublic:
        """The public view of a stored source (its fields are the source's own; the hash stays in)."""
        return cls.model_validate(source, from_attributes=True)


class SourcePage(BaseModel):
    """One page of the indexed documents, by scope then uri: ``total`` of them in all, and
    ``next_offset`` where the next page starts (null on the last)."""

    sources: list[SourcePublic]
    total: int
    next_offset: int | None

    @classmethod
    def of(cls, listed: Sequence[KnowledgeSource], offset: int, limit: int) -> SourcePage:
        """The page of ``listed`` (every document, in order) from ``offset``, at most ``limit`` long;
        only the page's documents are turned into their public view."""
        page = [SourcePublic.of(source) for source in listed[offset : offset + limit]]
        following = offset + len(page)
        return cls(sources=page, total=len(listed), next_offset=following if following < len(listed) else None)


class IngestFailure(BaseModel):
    source: str
    error: str


_LEFT_OUT = "Files of the named folders left out as formats hivemem does not read, by extension."


class IngestReport(BaseModel):
    documents: int
    indexed: int
    unchanged: int
    failed: int
    chunks: int
    failures: list[IngestFailure]
    elapsed_s: float
    left_out: dict[str, int] = Field(default_factory=dict, description=_LEFT_OUT)
    pruned: list[str] = Field(
        default_factory=list, description="Documents of the named folders removed first: their files are gone."
    )


class IngestAccepted(JobPublic):
    """An ingest job just started, and what of the named folders it will not read."""

    left_out: dict[str, int] = Field(default_factory=dict, description=_LEFT_OUT)
