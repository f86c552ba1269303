"""Request and response shapes shared by REST, MCP and the CLI; validation happens here, once.

The stored :class:`hivemem.model.Memory` is separate: these are what callers send and see.
Every constraint names its field in the error, and nothing is written when one fails.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
    create_model,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from hivemem.audit import public_detail
from hivemem.engineering import details_json_schema, details_shape_problem, implied_importance
from hivemem.errors import ValidationError as HivememValidationError
from hivemem.jobs import DeadLetter, Job, JobKind, JobState
from hivemem.limits import DEFAULT_LIMITS, Limits, details_problem, text_pattern
from hivemem.model import (
    GLOBAL_SCOPE,
    AuditEvent,
    Hit,
    Link,
    LinkType,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
    RelationType,
    Source,
    WriteOutcome,
)
from hivemem.scope import MAX_SCOPE_LENGTH, SCOPE_PATTERN, SCOPE_RULE, validate_scope

__all__ = [
    "MAX_BULK_MEMORIES",
    "MAX_CONTENT_CHARS",
    "MAX_QUERIES",
    "MAX_QUERY_LENGTH",
    "AuditPublic",
    "BulkMemorizeRequest",
    "BulkMemorizeResult",
    "ClosedGoalPublic",
    "ConsolidationPublic",
    "DeadLetterPublic",
    "ErrorBody",
    "FeatureStatus",
    "FieldProblem",
    "HandoffPublic",
    "HandoffSave",
    "JobPublic",
    "LinkCreate",
    "MemorizeAccepted",
    "MemorizeResult",
    "MemoryCreate",
    "MemoryPublic",
    "MemoryStatus",
    "Queries",
    "RecallLimit",
    "RecallRequest",
    "RecallResponse",
    "RecallResult",
    "RelatedResult",
    "RelationPublic",
    "RequestSchemas",
    "ScopeName",
    "SleepRequest",
    "SleepResult",
    "UndoResult",
    "describe_errors",
    "error_message",
    "request_schemas",
]

MAX_QUERIES = 5
MAX_BULK_MEMORIES = 1000
MAX_QUERY_LENGTH = 2000

_STRICT = ConfigDict(extra="forbid")


# `global: true` beside a project scope names two places: refused (`scope: ""` or null is the same place).
_GLOBAL_WITH_A_PROJECT = {
    "not": {
        "required": ["global", "scope"],
        "properties": {"global": {"const": True}, "scope": {"type": "string", "minLength": 1}},
    }
}


def _with_memory_rules(schema: dict[str, Any]) -> None:
    schema["allOf"] = [*details_json_schema(), _GLOBAL_WITH_A_PROJECT]


class _TextRule:
    """A text field's rule (:func:`hivemem.limits.text_pattern`), checked with Python's ``re``; the
    value comes back without its surrounding whitespace."""

    def __init__(self, min_chars: int) -> None:
        self.pattern = text_pattern(min_chars)
        self._compiled = re.compile(self.pattern)
        self._meaning = (
            "must not be blank or hold control characters"
            if min_chars == 1
            else f"must hold at least {min_chars} characters besides surrounding whitespace, and no control characters"
        )

    def __call__(self, value: str) -> str:
        if not self._compiled.match(value):
            raise ValueError(self._meaning)
        return value.strip()

    def schema(self) -> dict[str, Any]:
        """The JSON Schema keywords of the rule: the pattern the schema publishes."""
        return {"pattern": self.pattern}


def _scope_rule(value: str) -> str:
    try:
        return validate_scope(value)
    except HivememValidationError:
        raise ValueError(SCOPE_RULE.removeprefix("scope ")) from None


_TEXT_1, _TEXT_5, _TEXT_10 = _TextRule(1), _TextRule(5), _TextRule(10)
# The patterns go into the schema as data and are checked by the rules: every engine pydantic may
# pick (Rust's has no look-ahead, no surrogates) then validates the same way.
Title = Annotated[
    StrictStr, Field(min_length=5, max_length=200, json_schema_extra=_TEXT_5.schema()), AfterValidator(_TEXT_5)
]
MAX_CONTENT_CHARS = 10_000
Content = Annotated[
    StrictStr,
    Field(min_length=10, max_length=MAX_CONTENT_CHARS, json_schema_extra=_TEXT_10.schema()),
    AfterValidator(_TEXT_10),
]
Tag = Annotated[
    StrictStr, Field(min_length=1, max_length=64, json_schema_extra=_TEXT_1.schema()), AfterValidator(_TEXT_1)
]
FilePath = Annotated[
    StrictStr, Field(min_length=1, max_length=500, json_schema_extra=_TEXT_1.schema()), AfterValidator(_TEXT_1)
]
QueryText = Annotated[
    StrictStr,
    Field(min_length=1, max_length=MAX_QUERY_LENGTH, json_schema_extra=_TEXT_1.schema()),
    AfterValidator(_TEXT_1),
]


def _one_query_message(value: object, handler: ValidatorFunctionWrapHandler) -> str | list[str]:
    # One message, instead of pydantic's one per branch of the union (each naming its branch by
    # a type tag such as ``function-after[<…_TextRule object at 0x…>(), constrained-str]``).
    try:
        result: str | list[str] = handler(value)
    except PydanticValidationError:
        raise ValueError(
            f"must be a non-blank string of up to {MAX_QUERY_LENGTH} characters without control "
            f"characters, or a list of 1 to {MAX_QUERIES} such strings"
        ) from None
    return result


Queries = Annotated[
    QueryText | Annotated[list[QueryText], Field(min_length=1, max_length=MAX_QUERIES)],
    WrapValidator(_one_query_message),
]
"""A query, or 1 to ``MAX_QUERIES`` queries to fuse (``remember`` over REST, MCP and the CLI)."""

ThreadName = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=200,
        json_schema_extra=_TEXT_1.schema(),
        description="The conversation or session this memory is one turn or step of (an id the client keeps): "
        "recall then reads each memory with its neighbours in the thread, and lifts the other memories of the "
        "thread it finds best.",
    ),
    AfterValidator(_TEXT_1),
]
ScopeName = Annotated[
    StrictStr,
    Field(
        max_length=MAX_SCOPE_LENGTH,
        json_schema_extra={"pattern": SCOPE_PATTERN},
        description='A project scope such as `github.com/acme/api`; `""` is the global scope.',
    ),
    AfterValidator(_scope_rule),
]


def _whole_number(value: object) -> int:
    # JSON Schema's `integer` is a number without a fraction, so 5.0 is one; true and "5" are not.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError("must be a whole number")


# The validator comes after the bounds: inside them, pydantic would publish `ge`/`le` instead of
# JSON Schema's `minimum`/`maximum`.
RecallLimit = Annotated[StrictInt, Field(ge=1, le=100), BeforeValidator(_whole_number)]


# RFC 3339, the JSON Schema `date-time` format: a full date and time with its offset. pydantic alone
# would also take dates, numbers and Unix times written as text.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")


def _rfc3339(value: object) -> datetime:
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 date-time with a timezone, e.g. 2026-01-31T00:00:00Z")
    try:
        parsed = datetime.fromisoformat(value.upper())
    except ValueError as exc:
        raise ValueError(f"is not a valid date-time ({exc})") from None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        # Within a day of year 1 or 9999: in UTC it lies beyond what can be written, as a bound
        # it means "no bound" on that side.
        offset = parsed.utcoffset()
        return (datetime.min if offset and offset.total_seconds() > 0 else datetime.max).replace(tzinfo=UTC)


Timestamp = Annotated[
    datetime,
    PlainValidator(_rfc3339, json_schema_input_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339 with a timezone, e.g. `2026-01-31T00:00:00Z`.",
        }
    ),
]


def _details_description(limits: Limits) -> str:
    return (
        "Structured fields (e.g. a failure's error, component, severity, fix): at most "
        f"{limits.max_details_bytes} bytes as JSON, nested at most {limits.max_details_depth} deep."
    )


MAX_LINKS = 20


class LinkCreate(BaseModel):
    """An edge asked for on memorize: from the new memory to an existing one the caller can read."""

    model_config = _STRICT

    target_id: Annotated[str, Field(min_length=1, max_length=64, description="The id of an existing memory.")]
    relationship_type: LinkType = Field(
        description="related_to, depends_on, supersedes, similar, conflicts, implements, extends, achieves "
        "(a finding towards a goal) or closes (the note that closes a goal: its findings are consolidated under it)."
    )
    strength: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 1.0
    description: Annotated[StrictStr, Field(max_length=500, description="Why the edge is there.")] = ""

    def link(self) -> Link:
        """The core's form of this edge."""
        return Link(self.target_id, RelationType(self.relationship_type.value), self.strength, self.description.strip())


class MemoryCreate(BaseModel):
    """What a caller sends to memorize.

    Text fields hold no control characters (tab and line breaks are allowed); surrounding whitespace
    does not count towards their minimum length and is stripped. The sizes are this server's limits.
    """

    # Built per server with its limits (``limits``, see request_schemas); the rule of the text fields
    # is hivemem.limits.text_pattern. The docstring above is the schema's description: for callers.

    # The rules of failure and progress details (hivemem.engineering) and of `global`, stated in the
    # schema too.
    model_config = ConfigDict(extra="forbid", json_schema_extra=_with_memory_rules)
    limits: ClassVar[Limits] = DEFAULT_LIMITS

    title: Title
    content: Content
    scope: ScopeName | None = None
    memory_type: MemoryType = MemoryType.FACT
    importance: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 0.5
    source: Source = Source.AGENT_INFERRED
    tags: Annotated[list[Tag], Field(max_length=DEFAULT_LIMITS.max_tags)] = Field(default_factory=list)
    related_files: Annotated[list[FilePath], Field(max_length=DEFAULT_LIMITS.max_related_files)] = Field(
        default_factory=list
    )
    details: dict[str, Any] = Field(default_factory=dict, description=_details_description(DEFAULT_LIMITS))
    related_to: Annotated[list[LinkCreate], Field(max_length=MAX_LINKS)] = Field(
        default_factory=list, description="Edges from this memory to existing ones; an unknown target is refused."
    )
    thread: ThreadName | None = None
    # `global` is a Python keyword: the field is `global_`, its name in requests `global`. Once
    # validated it is `scope: ""`, and it is never dumped (a dump re-validates without it).
    global_: StrictBool = Field(
        default=False,
        alias="global",
        exclude=True,
        description='Store for every project: the global scope (`scope: ""`). Not with `scope`.',
    )

    @model_validator(mode="after")
    def _global_scope(self) -> MemoryCreate:
        if self.global_:
            if self.scope:
                raise ValueError("pass either `scope` or `global: true`, not both")
            self.scope = GLOBAL_SCOPE
            self.global_ = False
        return self

    @field_validator("details")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        problem = details_problem(value, cls.limits)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _engineering_state(self) -> MemoryCreate:
        # Failures and progress notes carry structured details (hivemem.engineering); their
        # severity or status sets the importance unless the caller gave one.
        problem = details_shape_problem(self.memory_type, self.details)
        if problem is not None:
            raise ValueError(problem)
        implied = implied_importance(self.memory_type, self.details)
        if implied is not None and "importance" not in self.model_fields_set:
            self.importance = implied
        return self


class RecallRequest(BaseModel):
    """What a caller sends to remember."""

    model_config = _STRICT

    query: Queries = Field(description=f"A query, or 1-{MAX_QUERIES} queries whose results are fused.")
    scope: ScopeName | None = None
    limit: RecallLimit | None = None
    memory_types: list[MemoryType] | None = None
    states: Annotated[list[MemoryState], Field(min_length=1, max_length=3)] | None = Field(
        default=None,
        description="Which lifecycle states to search: default working and consolidated; "
        "name `archived` to find memories that faded out of default recall.",
    )
    tags: Annotated[list[Tag], Field(max_length=DEFAULT_LIMITS.max_tags)] | None = None
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None
    min_relevance: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 0.0
    explain: StrictBool = False
    graph_hops: Annotated[StrictInt, Field(ge=0, le=2), BeforeValidator(_whole_number)] = Field(
        default=1, description="Edges walked from the results to the memories in `related` (0: none)."
    )

    def queries(self) -> list[str]:
        """The query or queries, as a list."""
        return [self.query] if isinstance(self.query, str) else list(self.query)


class BulkMemorizeRequest(BaseModel):
    """Many memories in one call (imports): embedded in batches, on the low-priority ``bulk`` queue."""

    model_config = _STRICT

    memories: list[MemoryCreate] = Field(min_length=1, max_length=MAX_BULK_MEMORIES)


@dataclass(frozen=True, slots=True)
class RequestSchemas:
    """The request models of one set of limits: REST, MCP and the CLI validate with these."""

    memory_create: type[MemoryCreate]
    bulk_memorize: type[BulkMemorizeRequest]
    recall: type[RecallRequest]


@functools.cache
def request_schemas(limits: Limits = DEFAULT_LIMITS) -> RequestSchemas:
    """The request models for ``limits``; the module's own classes for the defaults.

    Other limits get subclasses whose fields carry them, so the OpenAPI and MCP schemas state
    the limits the server enforces.
    """
    if limits == DEFAULT_LIMITS:
        return RequestSchemas(MemoryCreate, BulkMemorizeRequest, RecallRequest)
    tags = Annotated[list[Tag], Field(max_length=limits.max_tags)]
    files = Annotated[list[FilePath], Field(max_length=limits.max_related_files)]
    memory: type[MemoryCreate] = create_model(
        "MemoryCreate",
        __base__=MemoryCreate,
        tags=(tags, Field(default_factory=list)),
        related_files=(files, Field(default_factory=list)),
        details=(dict[str, Any], Field(default_factory=dict, description=_details_description(limits))),
    )
    memory.limits = limits
    bulk: type[BulkMemorizeRequest] = create_model(
        "BulkMemorizeRequest",
        __base__=BulkMemorizeRequest,
        memories=(list[memory], Field(min_length=1, max_length=MAX_BULK_MEMORIES)),
    )
    recall: type[RecallRequest] = create_model("RecallRequest", __base__=RecallRequest, tags=(tags | None, None))
    return RequestSchemas(memory, bulk, recall)


class ClosedGoalPublic(BaseModel):
    """A goal a closing note closed: its working findings were consolidated under the note (muted,
    undoable with the audit record of the consolidation)."""

    goal_id: str
    consolidated_ids: list[str]


class MemorizeResult(BaseModel):
    """The answer to memorize: the memory's id and what happened to it.

    ``id`` is the stored memory's: a new one when ``stored`` or ``superseded``, the existing one when
    ``reinforced`` or ``merged`` (merged into it). ``superseded_id`` names the memory a
    ``superseded`` one replaced (it stays, reachable by its ``supersedes`` link). ``scope`` is
    where it was stored (``""``: global). ``job_id`` names the job that did it (``GET /v1/jobs/{job_id}``).
    """

    id: str
    outcome: WriteOutcome
    scope: str
    superseded_id: str | None = None
    superseded_by_links: list[str] | None = Field(
        default=None, description="Memories this one's `supersedes` edges marked no longer valid."
    )
    closed_goals: list[ClosedGoalPublic] | None = Field(
        default=None, description="Goals this one's `closes` edges closed, each with the findings it consolidated."
    )
    job_id: str | None = None
    said: str = Field(default="", description="What was done, in words.")


class MemorizeAccepted(BaseModel):
    """The answer to memorize when its job is still running (HTTP 202): poll ``GET /v1/jobs/{job_id}``.

    ``id`` is the id assigned to the new memory; if the job finds the same content already in the
    scope it reinforces that memory instead, and the job's result names it.
    """

    id: str
    scope: str
    job_id: str
    state: JobState


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
    total: int = Field(description="Items in the job (memories, documents).")
    done: int = Field(description="Items with an outcome.")
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
            total=job.total,
            done=job.done,
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


class AuditPublic(BaseModel):
    """One audit record (``id`` is what undo takes): what was done (``action``), to what
    (``memory_id``: a memory or a token; empty for a refused request), in which scope, by whom
    (``author``, the principal), when, and its facts (``detail``: ids, reasons and counts, never
    memory text or a token)."""

    id: str
    action: str
    memory_id: str
    scope: str
    author: str
    detail: dict[str, Any]
    at: datetime

    @classmethod
    def of(cls, event: AuditEvent) -> AuditPublic:
        """The public view of an audit record: its fields, its detail without memory text."""
        return cls(
            id=event.id,
            action=event.action,
            memory_id=event.memory_id,
            scope=event.scope,
            author=event.author,
            detail=public_detail(event.detail),
            at=event.at,
        )


class UndoResult(BaseModel):
    """What an undo put back: the memories it restored or stored again."""

    audit_id: str
    action: str
    restored: list[str]


class PromoteRequest(BaseModel):
    """Copy a memory (typically of one's personal scope) into a team scope: its author is kept,
    and the copy links to the original with ``derived_from``."""

    model_config = _STRICT

    to: ScopeName = Field(description="The scope the copy goes to (write there is needed).")


class ConsolidationPublic(BaseModel):
    """One consolidation: the parent, the sources muted under it, and its audit record (undoable)."""

    parent_id: str
    parent_title: str
    source_ids: list[str]
    audit_id: str | None = Field(default=None, description="None in a dry run: nothing was written.")


# Bounded so that every handoff the schema admits fits one memory: a summary of up to 2,000
# characters and four lists of up to 10 items of up to 190 read as at most 9,800 characters.
HandoffItem = Annotated[
    StrictStr, Field(min_length=1, max_length=190, json_schema_extra=_TEXT_1.schema()), AfterValidator(_TEXT_1)
]
HandoffItems = Annotated[list[HandoffItem], Field(max_length=10)]
HandoffSummary = Annotated[
    StrictStr, Field(min_length=10, max_length=2000, json_schema_extra=_TEXT_10.schema()), AfterValidator(_TEXT_10)
]


class HandoffSave(BaseModel):
    """A session handoff: where the work stands, for the next session (or agent) to load."""

    model_config = _STRICT

    summary: HandoffSummary
    completed: HandoffItems = Field(default_factory=list)
    in_progress: HandoffItems = Field(default_factory=list)
    blocked: HandoffItems = Field(default_factory=list)
    next_steps: HandoffItems = Field(default_factory=list)
    scope: ScopeName | None = None

    def details(self) -> dict[str, Any]:
        """The handoff memory's details: the summary and every list that has items."""
        lists = self.model_dump(include={"completed", "in_progress", "blocked", "next_steps"})
        return {"summary": self.summary} | {k: v for k, v in lists.items() if v}


class HandoffPublic(BaseModel):
    """The latest handoff of a scope."""

    id: str
    scope: str
    author: str
    created_at: datetime
    summary: str
    completed: list[str]
    in_progress: list[str]
    blocked: list[str]
    next_steps: list[str]

    @classmethod
    def of(cls, memory: Memory) -> HandoffPublic:
        d = memory.details
        return cls(
            id=memory.id,
            scope=memory.scope,
            author=memory.author,
            created_at=memory.created_at,
            summary=str(d.get("summary", memory.content)),
            **{k: list(d.get(k, [])) for k in ("completed", "in_progress", "blocked", "next_steps")},
        )


class FeatureStatus(BaseModel):
    """A feature's latest progress note."""

    feature: str
    status: str
    completion: float | None
    blockers: list[str]
    memory_id: str
    updated_at: datetime


class MemoryStatus(BaseModel):
    """Where a scope's memory stands: counts, documents, open failures, features, consolidation, queues."""

    scope: str
    total: int
    by_type: dict[str, dict[str, int]] = Field(description="memory_type -> state -> count")
    documents: int = Field(default=0, description="Documents indexed in the scope (searchable with `knowledge`).")
    documents_failed: int = Field(
        default=0, description="Documents whose latest indexing failed (`hivemem knowledge sources` says why)."
    )
    failures_by_component: dict[str, dict[str, int]] = Field(
        description="Working failures: component -> severity -> count."
    )
    active_features: list[FeatureStatus] = Field(description="Latest progress per feature, not done, newest first.")
    last_consolidation: datetime | None = Field(description="When the scope last slept (None: never).")
    queue_depth: dict[str, int] = Field(description="Jobs waiting, by queue.")
    rerank_fallbacks: dict[str, int] = Field(
        default_factory=dict,
        description="Recalls the rerank pool did not serve since this process started, by why: late, "
        "unreachable, failed, cooling (skipped after one of those).",
    )


class SleepRequest(BaseModel):
    """A sleep pass asked for by hand: over one scope, with the settings' thresholds unless given."""

    model_config = _STRICT

    scope: ScopeName | None = None
    threshold: Annotated[StrictFloat, Field(ge=0.5, le=1.0)] | None = None
    min_size: Annotated[StrictInt, Field(ge=2, le=100), BeforeValidator(_whole_number)] | None = None
    dry_run: StrictBool = False
    archive: StrictBool = Field(
        default=True,
        description="Also move what has faded to the archive, as the scheduled pass does (false: consolidate only).",
    )


class ArchivedPublic(BaseModel):
    """A memory a sleep pass moved to the archive (or would move, dry), and how far it had faded."""

    id: str
    title: str
    memory_type: MemoryType
    strength: float = Field(description="Its strength when the pass ran, under the floor of 0.05.")


class SleepResult(BaseModel):
    """What a sleep pass did to one scope (or would do, dry)."""

    scope: str
    candidates: int = Field(description="Working memories of the window that were looked at.")
    dry_run: bool
    consolidations: list[ConsolidationPublic]
    archived: list[ArchivedPublic] = Field(
        default_factory=list,
        description="Memories moved to the archive: out of default recall, still stored; each move is "
        "audited (`archive`) and undone like a merge.",
    )


class RelationPublic(BaseModel):
    """A typed edge between two memories, as callers see it (``supersedes``: source replaced target)."""

    source_id: str
    target_id: str
    type: RelationType
    strength: float
    description: str = ""

    @classmethod
    def of(cls, relation: Relation) -> RelationPublic:
        """The public view of a stored relation (its fields are the relation's own)."""
        return cls.model_validate(relation, from_attributes=True)


class MemoryPublic(BaseModel):
    """A memory as callers see it (no embedding). ``valid_to`` is set once something superseded it;
    ``relations`` (on a get by id) are its edges to memories the caller can read."""

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
    valid_to: datetime | None = None
    thread: str = Field(default="", description='The conversation or task it is one step of ("": none).')
    relations: list[RelationPublic] = Field(default_factory=list)

    @classmethod
    def of(cls, memory: Memory, relations: Sequence[Relation] = ()) -> MemoryPublic:
        """The public view of a stored memory (with ``relations`` when given)."""
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
            valid_to=memory.valid_to,
            thread=memory.thread,
            relations=[RelationPublic.of(r) for r in relations],
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
    author: str = Field(description="Who wrote it (the principal; a promoted copy keeps its original's).")
    state: MemoryState = Field(description="working, consolidated (held by a parent) or archived (faded).")
    valid_to: datetime | None = Field(default=None, description="Set when a newer memory superseded this one.")
    label: str = Field(description="`[CONFIRMED]` when a user vouched for it, else `[INFERRED]`: verify those.")
    explain: dict[str, float | int | str | None] | None = None

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


class RelatedResult(RecallResult):
    """A memory linked to a result (up to 3, ``via`` "graph"): the result it hangs off, and how."""

    via: Literal["graph"] = "graph"
    linked_from: str
    relation: RelationType

    @classmethod
    def reached(
        cls,
        memory: Memory,
        score: float,
        linked_from: str,
        relation: RelationType,
        *,
        explain: dict[str, float | int | str | None] | None = None,
    ) -> RelatedResult:
        """The public view of a memory reached through an edge; ``explain``: how it scored (graph part)."""
        shown = RecallResult.of(Hit(memory=memory, score=score)).model_dump(exclude={"explain"})
        return cls(**shown, linked_from=linked_from, relation=relation, explain=explain)


class RecallResponse(BaseModel):
    """The answer to remember, and the scopes it searched (the caller's scope plus global).
    ``related``: memories linked to the results (``graph_hops`` edges away), not in them."""

    results: list[RecallResult]
    related: list[RelatedResult] = Field(default_factory=list)
    scopes: list[str] = Field(default_factory=list)


class FieldProblem(BaseModel):
    """One invalid field of a request."""

    field: str
    message: str


class ErrorBody(BaseModel):
    """Every error answer, 4xx and 5xx alike: a stable ``error`` code and a ``message`` to act on.

    Invalid input (422) also names the first offending ``field`` and lists each problem in ``detail``.
    """

    error: str = Field(description="A stable code, e.g. `validation_error`, `not_found`, `payload_too_large`.")
    message: str
    field: str | None = None
    detail: list[FieldProblem] | None = None


def error_message(error: dict[str, Any]) -> str:
    """What one pydantic error says, without pydantic's "Value error, " prefix."""
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


def describe_errors(errors: list[dict[str, Any]], *, request_location: bool = False) -> str:
    """One line per pydantic error, each naming its field: ``title: String should have at least 5 characters``.

    ``request_location``: the first part of each location is FastAPI's (``body``, ``query``, ``path``)
    and is left out.
    """
    lines = []
    for error in errors:
        loc = list(error.get("loc", ()))[1 if request_location else 0 :]
        where = ".".join(str(p) for p in loc)
        lines.append(f"{where}: {error_message(error)}" if where else error_message(error))
    return "; ".join(lines)
