"""Operators' views of a store: a page of memories, one memory's edit, and each scope's counts."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, model_validator

from hivemem.answers import MemoryPublic
from hivemem.errors import ValidationError
from hivemem.limits import DEFAULT_LIMITS
from hivemem.schemas import Content, Tag, Timestamp, Title

__all__ = [
    "CURSOR_PATTERN",
    "MAX_PAGE",
    "CreatedWindow",
    "MemoryPage",
    "MemoryUpdate",
    "ScopeStats",
    "decode_cursor",
    "encode_cursor",
]

MAX_PAGE = 200


# A cursor is a position: the creation time (microseconds since the epoch, UTC) and the id of the
# memory the next page follows. Every string of this shape is a valid position, so the schema
# says all there is to say of it (a cursor once base64 text could match the schema and be refused).
CURSOR_PATTERN = r"^[0-9]{1,17}\.[0-9A-Za-z_-]{1,64}$"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CURSOR = re.compile(CURSOR_PATTERN)


def encode_cursor(created_at: datetime, memory_id: str) -> str:
    """The cursor of the page that follows the memory (``created_at``, ``memory_id``)."""
    return f"{(created_at - _EPOCH) // timedelta(microseconds=1)}.{memory_id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor names. Raises ``ValidationError`` for one not of the cursors' shape."""
    if not _CURSOR.fullmatch(cursor):
        raise ValidationError("cursor: not a cursor (pass `next_cursor` back as it is)", field="cursor")
    micros, _, memory_id = cursor.partition(".")
    return _EPOCH + timedelta(microseconds=int(micros)), memory_id


class CreatedWindow(BaseModel):
    """A listing's creation-time bounds, as RFC 3339 text is read everywhere (``Timestamp``)."""

    created_after: Timestamp | None = None
    created_before: Timestamp | None = None


class MemoryPage(BaseModel):
    """One page of a listing, newest first; ``next_cursor`` fetches the next (null on the last)."""

    memories: list[MemoryPublic]
    next_cursor: str | None = None


class MemoryUpdate(BaseModel):
    """What an edit changes (at least one field). A new title or content is embedded again."""

    # Fields default to None (unchanged) but are not nullable: the schema says what a request may be.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    title: Title = None  # type: ignore[assignment]
    content: Content = None  # type: ignore[assignment]
    importance: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = None  # type: ignore[assignment]
    tags: Annotated[list[Tag], Field(max_length=DEFAULT_LIMITS.max_tags)] = None  # type: ignore[assignment]

    @model_validator(mode="after")
    def _something(self) -> MemoryUpdate:
        if not self.model_fields_set:
            raise ValueError("name at least one of title, content, importance, tags")
        return self


class ScopeStats(BaseModel):
    """How many memories a scope holds, by type and by state, and how many indexed documents."""

    scope: str
    memories: int
    by_type: dict[str, int]
    by_state: dict[str, int]
    documents: int = Field(default=0, description="Indexed documents (knowledge sources with chunks) of the scope.")
    chunks: int = Field(default=0, description="Their searchable chunks.")
    documents_failed: int = Field(
        default=0, description="Documents on record whose last indexing failed (`hivemem knowledge sources` says why)."
    )
