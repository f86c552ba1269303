"""Forgetting in bulk: what a caller asks to forget (a query and/or filters), and the preview that
must come first, whose token the delete gives back so that what is deleted is what was previewed."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, model_validator

from hivemem.model import MemoryState, MemoryType
from hivemem.schemas import QueryText, ScopeName, Tag, Timestamp
from hivemem.token_schemas import PrincipalName

__all__ = ["MAX_BULK_FORGET", "BulkForgetAnswer", "BulkForgetRequest", "ForgetPreviewItem"]

_NARROWING = ("query", "memory_types", "tags", "states", "author", "created_after", "created_before")

MAX_BULK_FORGET = 1000
"""The most memories one bulk forget deletes: past it, the filters must be narrowed."""


class BulkForgetRequest(BaseModel):
    """Which memories of one scope to forget: the best matches of ``query`` (up to ``limit``) and/or
    every memory the filters admit. Without ``confirm`` it is a dry run; with it, ``preview_token``
    must be the token of a preview of the same set."""

    # The schema says what is checked besides its fields: a query or at least one filter (here), and
    # a delete comes with its preview's token (the service answers 400 without it).
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [{"required": [n], "properties": {n: {"not": {"type": "null"}}}} for n in _NARROWING],
            "if": {"required": ["confirm"], "properties": {"confirm": {"const": True}}},
            "then": {"required": ["preview_token"], "properties": {"preview_token": {"type": "string"}}},
        },
    )

    query: QueryText | None = Field(default=None, description="Forget the best matches of this query, by meaning.")
    scope: ScopeName | None = Field(default=None, description="The one scope it works in (default: the caller's).")
    memory_types: Annotated[list[MemoryType], Field(min_length=1, max_length=12)] | None = None
    tags: Annotated[list[Tag], Field(min_length=1, max_length=20)] | None = None
    states: Annotated[list[MemoryState], Field(min_length=1, max_length=3)] | None = None
    author: PrincipalName | None = Field(default=None, description="Only what this principal wrote.")
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = Field(
        default=20, description="With `query`: how many of its best matches (the filters alone take every match)."
    )
    confirm: StrictBool = Field(default=False, description="False: a dry run. True: delete, with `preview_token`.")
    preview_token: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{32}$")] | None = Field(
        default=None, description="The token of the dry run whose set is to be deleted."
    )

    @model_validator(mode="after")
    def _narrowed(self) -> BulkForgetRequest:
        if all(getattr(self, name) is None for name in _NARROWING):
            raise ValueError(
                "give a query or at least one filter (memory_types, tags, states, author, created_after, "
                "created_before): a bulk forget never takes a whole scope by default"
            )
        return self


class ForgetPreviewItem(BaseModel):
    """One memory a bulk forget matches."""

    id: str
    title: str
    memory_type: MemoryType
    created_at: str


class BulkForgetAnswer(BaseModel):
    """A bulk forget's dry run (``forgotten`` null) or its delete (the ids deleted)."""

    scope: str
    count: int = Field(description="How many memories match.")
    first: list[ForgetPreviewItem] = Field(description="The first of them (up to 10), to check before deleting.")
    preview_token: str = Field(description="Give it back with `confirm: true` to delete exactly this set.")
    forgotten: list[str] | None = Field(default=None, description="The ids deleted (null on a dry run).")
    said: str
