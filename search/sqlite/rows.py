"""Mapping between domain objects and rows of the SQLite store."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

import numpy as np

from hivemem.errors import EmbeddingMismatchError
from hivemem.model import AuditEvent, Memory, MemoryState, MemoryType, Relation, RelationType, Source
from search.sqlite.schema import MEMORY_COLUMNS

__all__ = [
    "ASSIGNMENTS",
    "audit_from_row",
    "from_timestamp",
    "memory_from_row",
    "memory_row",
    "relation_from_row",
    "to_timestamp",
]

ASSIGNMENTS = ", ".join(f"{column.strip()} = ?" for column in MEMORY_COLUMNS.split(","))
"""``column = ?, …`` over every memory column, for an UPDATE in column order."""


def to_timestamp(value: datetime | None) -> str | None:
    """A stored timestamp: UTC, one fixed format, so comparing text compares time."""
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def from_timestamp(value: str | None) -> datetime | None:
    """A stored timestamp read back; None stays None."""
    return None if value is None else datetime.fromisoformat(value)


def _required_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value)


def memory_row(m: Memory, dimension: int) -> tuple[Any, ...]:
    """The values of ``m`` in ``MEMORY_COLUMNS`` order. Raises ``EmbeddingMismatchError`` for a
    vector that is not ``dimension`` long."""
    blob = None
    if m.embedding is not None:
        if len(m.embedding) != dimension:
            raise EmbeddingMismatchError(f"embedding has {len(m.embedding)} dimensions, the store expects {dimension}")
        blob = np.asarray(m.embedding, dtype=np.float32).tobytes()
    return (
        m.id, m.scope, m.title, m.content, json.dumps(m.tags), m.content_hash, m.memory_type.value,
        float(m.importance), m.source.value, json.dumps(m.related_files), m.state.value, m.author,
        to_timestamp(m.created_at), to_timestamp(m.updated_at), to_timestamp(m.last_accessed_at), m.access_count,
        to_timestamp(m.valid_from), to_timestamp(m.valid_to), json.dumps(m.details), blob, m.embedding_model,
        m.thread, to_timestamp(m.verified_at),
    )  # fmt: skip


def memory_from_row(row: sqlite3.Row) -> Memory:
    """The memory a row of ``SELECT MEMORY_COLUMNS`` holds."""
    blob = row["embedding"]
    return Memory(
        id=row["id"],
        scope=row["scope"],
        title=row["title"],
        content=row["content"],
        content_hash=row["content_hash"],
        memory_type=MemoryType(row["memory_type"]),
        importance=row["importance"],
        source=Source(row["source"]),
        tags=json.loads(row["tags"]),
        related_files=json.loads(row["related_files"]),
        state=MemoryState(row["state"]),
        author=row["author"],
        created_at=_required_timestamp(row["created_at"]),
        updated_at=_required_timestamp(row["updated_at"]),
        last_accessed_at=from_timestamp(row["last_accessed_at"]),
        access_count=row["access_count"],
        valid_from=from_timestamp(row["valid_from"]),
        valid_to=from_timestamp(row["valid_to"]),
        details=json.loads(row["details"]),
        embedding=None if blob is None else np.frombuffer(blob, dtype=np.float32).tolist(),
        embedding_model=row["embedding_model"],
        thread=row["thread"],
        verified_at=from_timestamp(row["verified_at"]),
    )


def relation_from_row(row: sqlite3.Row) -> Relation:
    """The relation a row of ``relations`` holds."""
    return Relation(
        source_id=row["source_id"],
        target_id=row["target_id"],
        type=RelationType(row["type"]),
        strength=row["strength"],
        author=row["author"],
        created_at=_required_timestamp(row["created_at"]),
        description=row["description"],
    )


def audit_from_row(row: sqlite3.Row) -> AuditEvent:
    """The audit event a row of ``audit`` holds."""
    return AuditEvent(
        action=row["action"],
        memory_id=row["memory_id"],
        scope=row["scope"],
        author=row["author"],
        detail=json.loads(row["detail"]),
        at=_required_timestamp(row["at"]),
        id=str(row["seq"]),
    )
