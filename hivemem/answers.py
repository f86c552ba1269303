"""Answer shapes shared by REST, MCP and the CLI: what memorize, recall, jobs, the audit log, status
and sleep answer, and the error body every refusal carries (:mod:`hivemem.schemas` holds the requests).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from hivemem.audit import public_detail
from hivemem.jobs import DeadLetter, Job, JobKind, JobState
from hivemem.model import (
    AuditEvent,
    Hit,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
    RelationType,
    Source,
    WriteOutcome,
)
from hivemem.staleness import stale_label

__all__ = [
    "ArchivedPublic",
    "AuditPublic",
    "Briefing",
    "BriefingItem",
    "BulkMemorizeResult",
    "ClosedGoalPublic",
    "ConsolidationPublic",
    "DeadLetterPublic",
    "ErrorBody",
    "FeatureStatus",
    "FieldProblem",
    "HandoffPublic",
    "JobPublic",
    "MemorizeAccepted",
    "MemorizeResult",
    "MemoryPublic",
    "MemoryStatus",
    "RecallResponse",
    "RecallResult",
    "Redaction",
    "RelatedResult",
    "RelationPublic",
    "SleepResult",
    "StaleMemory",
    "UndoResult",
    "describe_errors",
    "error_message",
    "trust_label",
]


class ClosedGoalPublic(BaseModel):
    """A goal a closing note closed: its working findings were consolidated under the note (muted,
    undoable with the audit record of the consolidation)."""

    goal_id: str
    consolidated_ids: list[str]


class Redaction(BaseModel):
    """A credential a write replaced by ``[REDACTED:kind]`` (the ``redact`` secret policy)."""

    field: str = Field(description="Where it was, e.g. `content` or `details.summary`.")
    kind: str = Field(description="What it looked like, e.g. `aws_access_key`, `private_key`, `secret_assignment`.")


class MemorizeResult(BaseModel):
    """The answer to memorize: the memory's id and what happened to it.

    ``id`` is the stored memory's: a new one when ``stored`` or ``superseded``, the existing one when
    ``reinforced`` or ``merged`` (merged into it; the merged text is kept word for word).
    ``superseded_id`` names the memory a ``superseded`` one replaced, or the first one its explicit
    ``supersedes`` link marked no longer valid (it stays, reachable by that link). ``scope`` is
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
    redacted: list[Redaction] | None = Field(
        default=None,
        description="Credentials replaced by `[REDACTED:kind]` before the memory was stored (left out when none).",
        exclude_if=lambda found: found is None,  # answers keep the shape they had unless something was
    )


class MemorizeAccepted(BaseModel):
    """The answer to memorize when its job is still running (HTTP 202): poll ``GET /v1/jobs/{job_id}``.

    ``id`` is the id assigned to the new memory; if the job finds the same content already in the
    scope it reinforces that memory instead, and the job's result names it.
    """

    id: str
    scope: str
    job_id: str
    state: JobState
    redacted: list[Redaction] | None = Field(
        default=None,
        description="Credentials replaced by `[REDACTED:kind]` before the memory was stored (left out when none).",
        exclude_if=lambda found: found is None,  # answers keep the shape they had unless something was
    )


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
        """The public view of a dead letter (its fields are the letter's own)."""
        return cls.model_validate(letter, from_attributes=True)


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


class ConsolidationPublic(BaseModel):
    """One consolidation: the parent, the sources muted under it, and its audit record (undoable)."""

    parent_id: str
    parent_title: str
    source_ids: list[str]
    audit_id: str | None = Field(default=None, description="None in a dry run: nothing was written.")


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


class StaleMemory(BaseModel):
    """A memory past its type's verification age: for a person to verify or forget."""

    id: str
    title: str
    memory_type: MemoryType
    verified_at: datetime
    days: int = Field(description="Days since it was last verified.")


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
    stale: list[StaleMemory] = Field(
        default_factory=list,
        description="Facts, progress notes and failures not verified for longer than their type holds, longest "
        "first (at most 20): verify (`memory` action `verify`) or forget each.",
    )
    rerank_fallbacks: dict[str, int] = Field(
        default_factory=dict,
        description="Recalls the rerank pool did not serve since this process started, by why: late, "
        "unreachable, failed, cooling (skipped after one of those).",
    )


def trust_label(source: Source) -> str:
    """``[CONFIRMED]`` for what a user vouched for, else ``[INFERRED]``: how recall and briefings label it."""
    return "[CONFIRMED]" if source is Source.USER_CONFIRMED else "[INFERRED]"


class BriefingItem(BaseModel):
    """One memory named in a briefing."""

    id: str
    title: str
    memory_type: MemoryType
    label: str = Field(description="`[CONFIRMED]` when a user vouched for it, else `[INFERRED]`.")
    created_at: datetime


class Briefing(BaseModel):
    """What a session starting in a scope should know: its latest handoff, open failures, features
    not done, and its most important decisions and preferences; ``text`` says it in at most about
    1,500 tokens, for a client hook to inject."""

    scope: str
    handoff: HandoffPublic | None
    open_failures: list[BriefingItem] = Field(description="The newest working failures.")
    unfinished: list[FeatureStatus] = Field(description="Features whose latest progress note is not done.")
    key_memories: list[BriefingItem] = Field(
        description="Current decisions, preferences, architecture and strategy notes, most important first."
    )
    team_wide: list[BriefingItem] = Field(
        default_factory=list,
        description="The global scope's current decisions and preferences, when the caller may read it and "
        "the briefing is a project's.",
    )
    text: str


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
    verified_at: datetime = Field(
        description="When it was last verified: created, said again, edited, or confirmed with `verify`."
    )
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
            verified_at=memory.last_verified,
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
    verified_at: datetime = Field(description="When it was last verified (created, said again, edited, `verify`).")
    label: str = Field(
        description="`[CONFIRMED]` when a user vouched for it, else `[INFERRED]`: verify those. A fact, progress "
        "note or failure not verified for longer than its type holds adds `[STALE? last verified N days ago]`."
    )
    stale_days: int | None = Field(
        default=None, description="Days since it was last verified, when past its type's age (else null)."
    )
    explain: dict[str, float | int | str | None] | None = None

    @classmethod
    def of(cls, hit: Hit, *, explain: bool = False) -> RecallResult:
        """The public view of one hit."""
        shared = MemoryPublic.of(hit.memory).model_dump(include=set(cls.model_fields))
        return cls(
            **shared,
            score=round(hit.score, 6),
            label=trust_label(hit.memory.source),
            explain=dict(hit.explain) if explain else None,
        )

    def marked_stale(self, days: int | None) -> Self:
        """This result labelled stale (``days`` since it was verified), or as it is for None."""
        if days is None:
            return self
        return self.model_copy(update={"label": f"{self.label} {stale_label(days)}", "stale_days": days})


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
    knn_related_from: float | None = Field(
        default=None,
        description="With `explain`: the `knn_score` from which a memory bears on the query, for the model "
        "serving this recall (all-MiniLM-L6-v2: 0.35; each model its own, hivemem.cosine_bands).",
        exclude_if=lambda given: given is None,  # answers without `explain` keep the shape they had
    )


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
