"""Request and response shapes shared by REST, MCP and the CLI; validation happens here, once.

The stored :class:`hivemem.model.Memory` is separate: these are what callers send and see.
Every constraint names its field in the error, and nothing is written when one fails.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

from hivemem.jobs import DeadLetter, Job, JobKind, JobState
from hivemem.model import Hit, Memory, MemoryType, Source, WriteOutcome
from hivemem.scope import validate_scope

__all__ = [
    "MAX_BULK_MEMORIES",
    "MAX_QUERIES",
    "MAX_QUERY_LENGTH",
    "BulkMemorizeRequest",
    "BulkMemorizeResult",
    "DeadLetterPublic",
    "JobPublic",
    "MemorizeAccepted",
    "MemorizeResult",
    "MemoryCreate",
    "MemoryPublic",
    "RecallRequest",
    "RecallResponse",
    "RecallResult",
    "describe_errors",
]

MAX_QUERIES = 5
MAX_BULK_MEMORIES = 1000
Tag = Annotated[StrictStr, Field(min_length=1, max_length=64)]
FilePath = Annotated[StrictStr, Field(min_length=1, max_length=500)]
MAX_QUERY_LENGTH = 2000


def _scope_or_none(value: str | None) -> str | None:
    return None if value is None else validate_scope(value)


class MemoryCreate(BaseModel):
    """What a caller sends to memorize. Surrounding whitespace is stripped before the length checks."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: Annotated[StrictStr, Field(min_length=5, max_length=200)]
    content: Annotated[StrictStr, Field(min_length=10, max_length=10_000)]
    scope: StrictStr | None = None
    memory_type: MemoryType = MemoryType.FACT
    importance: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 0.5
    source: Source = Source.AGENT_INFERRED
    tags: Annotated[list[Tag], Field(max_length=32)] = Field(default_factory=list)
    related_files: Annotated[list[FilePath], Field(max_length=64)] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)

    _check_scope = field_validator("scope")(_scope_or_none)


class RecallRequest(BaseModel):
    """What a caller sends to remember."""

    model_config = ConfigDict(extra="forbid")

    query: str | list[str] = Field(description="A query, or 1-5 queries whose results are fused.")
    scope: StrictStr | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=100)] | None = None
    memory_types: list[MemoryType] | None = None
    tags: Annotated[list[Tag], Field(max_length=32)] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    min_relevance: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 0.0
    explain: StrictBool = False

    _check_scope = field_validator("scope")(_scope_or_none)

    @field_validator("query", mode="before")
    @classmethod
    def _queries(cls, value: object) -> str | list[str]:
        # One check with one message, instead of pydantic's per-branch union errors.
        raw: list[object] = value if isinstance(value, list) else [value]
        texts = [t for t in raw if isinstance(t, str)]
        if not isinstance(value, str | list) or len(texts) != len(raw):
            raise ValueError("must be a string or a list of strings")
        if not 1 <= len(texts) <= MAX_QUERIES:
            raise ValueError(f"must hold 1 to {MAX_QUERIES} queries, got {len(texts)}")
        for text in texts:
            if not text.strip():
                raise ValueError("a query must not be empty")
            if len(text) > MAX_QUERY_LENGTH:
                raise ValueError(f"a query must be at most {MAX_QUERY_LENGTH} characters")
        return value if isinstance(value, str) else texts

    @field_validator("created_after", "created_before")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("must carry a timezone (e.g. 2026-01-31T00:00:00Z)")
        return value

    def queries(self) -> list[str]:
        """The query or queries, as a list."""
        return [self.query] if isinstance(self.query, str) else list(self.query)


class MemorizeResult(BaseModel):
    """The answer to memorize: the memory's id and what happened to it.

    ``id`` is the stored memory's: a new one when ``stored``, the existing one when ``reinforced``.
    ``job_id`` names the job that did it (``GET /v1/jobs/{job_id}``).
    """

    id: str
    outcome: WriteOutcome
    job_id: str | None = None


class MemorizeAccepted(BaseModel):
    """The answer to memorize when its job is still running (HTTP 202): poll ``GET /v1/jobs/{job_id}``.

    ``id`` is the id assigned to the new memory; if the job finds the same content already in the
    scope it reinforces that memory instead, and the job's result names it.
    """

    id: str
    job_id: str
    state: JobState


class BulkMemorizeRequest(BaseModel):
    """Many memories in one call (imports): embedded in batches, on the low-priority ``ingest`` queue."""

    model_config = ConfigDict(extra="forbid")

    memories: list[MemoryCreate] = Field(min_length=1, max_length=MAX_BULK_MEMORIES)


class BulkMemorizeResult(BaseModel):
    """The answer to a bulk memorize: the job, the ids assigned in order, and the outcomes once done."""

    job_id: str
    state: JobState
    ids: list[str]
    results: list[MemorizeResult] | None = None


class JobPublic(BaseModel):
    """A job as callers see it. ``progress`` is the fraction of its items done (0-1)."""

    id: str
    kind: JobKind
    state: JobState
    progress: float
    result: dict[str, Any] | None
    error: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, job: Job) -> JobPublic:
        """The public view of a job."""
        return cls(
            id=job.id,
            kind=job.kind,
            state=job.state,
            progress=round(job.progress, 4),
            result=job.result,
            error=job.error,
            created_at=job.created_at,
            updated_at=job.updated_at,
        )


class DeadLetterPublic(BaseModel):
    """A task that failed for good, and the jobs it failed."""

    task: str
    job_ids: list[str]
    error: str
    attempts: int
    failed_at: datetime

    @classmethod
    def of(cls, letter: DeadLetter) -> DeadLetterPublic:
        """The public view of a dead letter."""
        return cls(
            task=letter.task,
            job_ids=list(letter.job_ids),
            error=letter.error,
            attempts=letter.attempts,
            failed_at=letter.failed_at,
        )


class MemoryPublic(BaseModel):
    """A memory as callers see it (no embedding)."""

    id: str
    title: str
    content: str
    scope: str
    memory_type: MemoryType
    importance: float
    source: Source
    tags: list[str]
    related_files: list[str]
    state: str
    author: str
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    details: dict[str, Any]

    @classmethod
    def of(cls, memory: Memory) -> MemoryPublic:
        """The public view of a stored memory."""
        return cls(
            id=memory.id,
            title=memory.title,
            content=memory.content,
            scope=memory.scope,
            memory_type=memory.memory_type,
            importance=memory.importance,
            source=memory.source,
            tags=memory.tags,
            related_files=memory.related_files,
            state=memory.state.value,
            author=memory.author,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            last_accessed_at=memory.last_accessed_at,
            access_count=memory.access_count,
            details=memory.details,
        )


class RecallResult(BaseModel):
    """One recall result."""

    id: str
    title: str
    content: str
    scope: str
    memory_type: MemoryType
    importance: float
    source: Source
    score: float
    created_at: datetime
    tags: list[str]
    label: str = Field(description="`[CONFIRMED]` when a user vouched for it, else `[INFERRED]`: verify those.")
    explain: dict[str, float | int | None] | None = None

    @classmethod
    def of(cls, hit: Hit, *, explain: bool = False) -> RecallResult:
        """The public view of one hit."""
        shared = MemoryPublic.of(hit.memory).model_dump(include=set(cls.model_fields))
        return cls(
            **shared,
            score=round(hit.score, 6),
            label="[CONFIRMED]" if hit.memory.source is Source.USER_CONFIRMED else "[INFERRED]",
            explain=dict(hit.explain) if explain else None,
        )


class RecallResponse(BaseModel):
    """The answer to remember."""

    results: list[RecallResult]


def describe_errors(errors: list[dict[str, Any]], *, request_location: bool = False) -> str:
    """One line per pydantic error, each naming its field: ``title: String should have at least 5 characters``.

    ``request_location``: the first part of each location is FastAPI's (``body``, ``query``, ``path``)
    and is left out.
    """
    lines = []
    for error in errors:
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        loc = list(error.get("loc", ()))[1 if request_location else 0 :]
        where = ".".join(str(p) for p in loc)
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)
