"""Request shapes shared by REST, MCP and the CLI; validation happens here, once.

The stored :class:`hivemem.model.Memory` is separate: these are what callers send;
:mod:`hivemem.answers` holds what they see.
Every constraint names its field in the error, and nothing is written when one fails.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

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
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from hivemem.engineering import details_json_schema, details_shape_problem, implied_importance
from hivemem.errors import ValidationError as HivememValidationError
from hivemem.limits import DEFAULT_LIMITS, Limits, details_problem, text_pattern
from hivemem.model import (
    GLOBAL_SCOPE,
    Link,
    LinkType,
    MemoryState,
    MemoryType,
    RelationType,
    Source,
)
from hivemem.scope import MAX_SCOPE_LENGTH, SCOPE_PATTERN, SCOPE_RULE, validate_scope

__all__ = [
    "MAX_BULK_MEMORIES",
    "MAX_CONTENT_CHARS",
    "MAX_QUERIES",
    "MAX_QUERY_LENGTH",
    "BulkMemorizeRequest",
    "HandoffSave",
    "LinkCreate",
    "MemoryCreate",
    "Queries",
    "RecallLimit",
    "RecallRequest",
    "ScopeName",
    "SleepRequest",
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

    # The sizes are the input limits in force (hivemem.limits.DEFAULT_LIMITS, read at import); the rule
    # of the text fields is hivemem.limits.text_pattern. The docstring above is the schema's
    # description: for callers.

    # The rules of failure and progress details (hivemem.engineering) and of `global`, stated in the
    # schema too.
    model_config = ConfigDict(extra="forbid", json_schema_extra=_with_memory_rules)

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
        problem = details_problem(value, DEFAULT_LIMITS)
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
    exclude_stale: StrictBool = Field(
        default=False,
        description="Leave out stale facts, progress notes and failures (else labelled `[STALE? …]`).",
    )
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


class PromoteRequest(BaseModel):
    """Copy a memory (typically of one's personal scope) into a team scope: its author is kept,
    and the copy links to the original with ``derived_from``."""

    model_config = _STRICT

    to: ScopeName = Field(description="The scope the copy goes to (write there is needed).")


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
