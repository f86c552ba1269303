"""Memories as JSON-safe dicts: how they travel through the broker (JSON serialization only) and
the body of their OpenSearch documents.

The round trip is exact: every field, tz-aware timestamps, enums, the embedding.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hivemem.errors import ValidationError
from hivemem.model import Link, Memory, MemoryState, MemoryType, RelationType, Source

__all__ = ["memory_from_json", "memory_to_json"]

_DATES = ("created_at", "updated_at", "last_accessed_at", "valid_from", "valid_to", "verified_at")


def memory_to_json(memory: Memory, format_date: Callable[[datetime], str] = datetime.isoformat) -> dict[str, Any]:
    """The memory as a dict of JSON types; datetimes through ``format_date`` (ISO 8601 with offset)."""
    out: dict[str, Any] = {
        "id": memory.id,
        "scope": memory.scope,
        "title": memory.title,
        "content": memory.content,
        "content_hash": memory.content_hash,
        "memory_type": memory.memory_type.value,
        "importance": memory.importance,
        "source": memory.source.value,
        "tags": list(memory.tags),
        "related_files": list(memory.related_files),
        "state": memory.state.value,
        "author": memory.author,
        "access_count": memory.access_count,
        "details": memory.details,
        "embedding": None if memory.embedding is None else list(memory.embedding),
        "embedding_model": memory.embedding_model,
        "thread": memory.thread,
    }
    if memory.requested_links:
        out["requested_links"] = [
            {"target_id": k.target_id, "type": k.type.value, "strength": k.strength, "description": k.description}
            for k in memory.requested_links
        ]
    for name in _DATES:
        value: datetime | None = getattr(memory, name)
        out[name] = None if value is None else format_date(value)
    return out


def memory_from_json(data: dict[str, Any]) -> Memory:
    """The memory a :func:`memory_to_json` dict describes. Raises ``ValidationError`` on a malformed one."""
    try:
        dates = {name: None if data.get(name) is None else datetime.fromisoformat(data[name]) for name in _DATES}
        embedding = data.get("embedding")
        return Memory(
            id=str(data["id"]),
            scope=str(data["scope"]),
            title=str(data["title"]),
            content=str(data["content"]),
            content_hash=str(data["content_hash"]),
            memory_type=MemoryType(data["memory_type"]),
            importance=float(data["importance"]),
            source=Source(data["source"]),
            tags=[str(t) for t in data["tags"]],
            related_files=[str(f) for f in data["related_files"]],
            state=MemoryState(data["state"]),
            author=str(data["author"]),
            access_count=int(data["access_count"]),
            details=dict(data["details"]),
            embedding=None if embedding is None else [float(x) for x in embedding],
            embedding_model=str(data["embedding_model"]),
            thread=str(data.get("thread", "")),
            created_at=dates["created_at"] or _missing("created_at"),
            updated_at=dates["updated_at"] or _missing("updated_at"),
            last_accessed_at=dates["last_accessed_at"],
            valid_from=dates["valid_from"],
            valid_to=dates["valid_to"],
            verified_at=dates["verified_at"],
            requested_links=tuple(
                Link(str(k["target_id"]), RelationType(k["type"]), float(k["strength"]), str(k.get("description", "")))
                for k in data.get("requested_links", ())
            ),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed memory payload: {exc!r}") from exc


def _missing(name: str) -> datetime:
    raise ValueError(f"{name} is required")
