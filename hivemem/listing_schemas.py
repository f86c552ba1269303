"""Operators' views of a store: a page of memories, one memory's edit, and each scope's counts."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, model_validator

from hivemem.errors import ValidationError
from hivemem.limits import DEFAULT_LIMITS
from hivemem.schemas import Content, MemoryPublic, Tag, Timestamp, Title

__all__ = ["MAX_PAGE", "CreatedWindow", "MemoryPage", "MemoryUpdate", "ScopeStats", "decode_cursor", "encode_cursor"]

MAX_PAGE = 200


def encode_cursor(created_at: datetime, memory_id: str) -> str:
    """The opaque cursor of the page that follows the memory (``created_at``, ``memory_id``)."""
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{memory_id}".encode()).decode("ascii")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The memory a cursor points after. Raises ``ValidationError`` for one this server did not make."""
    try:
        stamp, _, memory_id = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8").partition("|")
        created_at = datetime.fromisoformat(stamp)
    except (binascii.Error, UnicodeError, ValueError):
        memory_id, created_at = "", None
    if not memory_id or created_at is None or created_at.tzinfo is None:
        raise ValidationError(
            "cursor: not a cursor this server gave (pass `next_cursor` back as it is)", field="cursor"
        )
    return created_at, memory_id


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
