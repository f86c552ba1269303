"""The stored domain objects and the policies that act on them.

Everything here is plain data: no I/O. Timestamps are tz-aware UTC. API request and response
shapes live in :mod:`hivemem.schemas`, apart from the stored :class:`Memory`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

__all__ = [
    "GLOBAL_SCOPE",
    "AuditEvent",
    "DuplicatePolicy",
    "FusionMethod",
    "Hit",
    "Link",
    "LinkType",
    "Memory",
    "MemoryState",
    "MemoryType",
    "Relation",
    "RelationType",
    "RetrievalMode",
    "Source",
    "WriteOutcome",
    "embedding_text",
    "new_memory_id",
    "utcnow",
]

GLOBAL_SCOPE = ""
"""The global scope: memories every project can recall."""


def utcnow() -> datetime:
    """The current time, tz-aware UTC."""
    return datetime.now(UTC)


def new_memory_id() -> str:
    """A fresh memory id. The gateway assigns ids so every job that carries one is idempotent."""
    return str(uuid.uuid4())


class MemoryType(StrEnum):
    """What kind of knowledge a memory holds; drives decay half-lives and filters."""

    DECISION = "decision"
    ARCHITECTURE = "architecture"
    BUG_FIX = "bug_fix"
    FAILURE = "failure"
    PROGRESS = "progress"
    PREFERENCE = "preference"
    FACT = "fact"
    STRATEGY = "strategy"
    GOAL = "goal"
    HANDOFF = "handoff"
    INSIGHT = "insight"
    CONVERSATION = "conversation"


# The docstrings of the enums that requests carry are their JSON Schema descriptions, which agents
# read: plain words on one line, no markup.
class Source(StrEnum):
    """Who vouches for a memory. Recall trusts user_confirmed above agent_inferred."""

    USER_CONFIRMED = "user_confirmed"
    AGENT_INFERRED = "agent_inferred"
    IMPORTED = "imported"


class MemoryState(StrEnum):
    """Lifecycle state. Default recall reads working and consolidated; nothing is deleted."""

    WORKING = "working"
    CONSOLIDATED = "consolidated"
    ARCHIVED = "archived"


class RelationType(StrEnum):
    """The typed edges between memories."""

    RELATED_TO = "related_to"
    DEPENDS_ON = "depends_on"
    SUPERSEDES = "supersedes"
    SIMILAR = "similar"
    CONFLICTS = "conflicts"
    IMPLEMENTS = "implements"
    EXTENDS = "extends"
    ACHIEVES = "achieves"
    CLOSES = "closes"
    DERIVED_FROM = "derived_from"


class DuplicatePolicy(StrEnum):
    """What a store does when asked to write an id that already exists (and, for UPDATE, one that
    does not: an edit of a memory forgotten meanwhile must not bring it back)."""

    FAIL = "fail"
    SKIP = "skip"
    OVERWRITE = "overwrite"
    UPDATE = "update"


class FusionMethod(StrEnum):
    """How the BM25 and vector legs of recall are combined."""

    MINMAX = "minmax"
    RRF = "rrf"


class RetrievalMode(StrEnum):
    """Which legs recall runs: both fused (the default), or one alone (benchmarks, diagnostics)."""

    HYBRID = "hybrid"
    DENSE = "dense"
    BM25 = "bm25"


class WriteOutcome(StrEnum):
    """What memorize did with a new memory."""

    STORED = "stored"
    REINFORCED = "reinforced"
    MERGED = "merged"
    SUPERSEDED = "superseded"


class LinkType(StrEnum):
    """The edges a caller may ask for on memorize: every relation type but consolidation's derived_from."""

    RELATED_TO = "related_to"
    DEPENDS_ON = "depends_on"
    SUPERSEDES = "supersedes"
    SIMILAR = "similar"
    CONFLICTS = "conflicts"
    IMPLEMENTS = "implements"
    EXTENDS = "extends"
    ACHIEVES = "achieves"
    CLOSES = "closes"


@dataclass(frozen=True, slots=True)
class Link:
    """An edge a caller asks for when memorizing: from the memory to ``target_id``."""

    target_id: str
    type: RelationType
    strength: float = 1.0
    description: str = ""


def embedding_text(title: str, content: str) -> str:
    """The text the embedder sees for a memory: the title carries the gist, the content the detail."""
    return f"{title}\n{content}"


@dataclass(slots=True)
class Memory:
    """One stored memory. ``id`` is assigned by the gateway before any job runs."""

    id: str
    scope: str
    title: str
    content: str
    content_hash: str
    memory_type: MemoryType = MemoryType.FACT
    importance: float = 0.5
    source: Source = Source.AGENT_INFERRED
    tags: list[str] = field(default_factory=list)
    related_files: list[str] = field(default_factory=list)
    state: MemoryState = MemoryState.WORKING
    author: str = ""
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    access_count: int = 0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    details: dict[str, Any] = field(default_factory=dict)
    embedding: list[float] | None = None
    embedding_model: str = ""
    # The conversation or session this memory is one turn or step of ("" for none): recall reads a
    # memory together with its neighbours in the thread (ordered by created_at, then id), and lifts
    # it toward the best of its thread (hivemem.thread_context).
    thread: str = ""
    # When someone last said it still holds: its creation (None), a repeat or a duplicate that
    # reinforced it, an edit, or a `verify`. Types that go stale are labelled from it (hivemem.staleness).
    verified_at: datetime | None = None
    # Edges asked for with this write, added by the memorize job from the memory it ends in (a
    # reinforced copy links from the memory it reinforced). Not a stored field: read the edges back
    # with ``relations``.
    requested_links: tuple[Link, ...] = ()

    def embedding_text(self) -> str:
        """The text the embedder sees (see :func:`embedding_text`)."""
        return embedding_text(self.title, self.content)

    @property
    def last_verified(self) -> datetime:
        """When it was last verified: ``verified_at``, else its creation."""
        return self.verified_at or self.created_at

    def superseded_at(self, now: datetime) -> bool:
        """Whether the memory is no longer valid at ``now`` (its ``valid_to`` has passed)."""
        return self.valid_to is not None and self.valid_to <= now


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed, directed edge between two memories."""

    source_id: str
    target_id: str
    type: RelationType
    strength: float = 1.0
    author: str = ""
    created_at: datetime = field(default_factory=utcnow)
    description: str = ""  # why the edge is there, in the words of whoever asked for it

    def other_end(self, memory_id: str) -> str:
        """The memory at the far end of this edge from ``memory_id``."""
        return self.target_id if self.source_id == memory_id else self.source_id

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes the edge one: at most one of each type from a source to a target."""
        return (self.source_id, self.target_id, self.type.value)

    def oldest_first(self) -> tuple[datetime, str, str, str]:
        """The order stores list edges in: by creation, ties by :attr:`key`."""
        return (self.created_at, *self.key)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """A record of a destructive or merging change (forget, merge, supersede)."""

    action: str
    memory_id: str
    scope: str
    author: str
    detail: dict[str, Any] = field(default_factory=dict)
    at: datetime = field(default_factory=utcnow)
    id: str = ""  # the store's, once written


@dataclass(frozen=True, slots=True)
class Hit:
    """One recall result with its final score and how it was made."""

    memory: Memory
    score: float
    explain: dict[str, float | int | str | None] = field(default_factory=dict)
