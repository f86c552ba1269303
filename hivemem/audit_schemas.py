"""The audit interface's request (``GET /v1/audit``, ``hivemem audit``), shared by REST and the CLI."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from hivemem.audit import AUDITED_ACTIONS, MAX_AUDIT_LIMIT, AuditAction
from hivemem.schemas import ScopeName, Timestamp

__all__ = ["MAX_AUDIT_LIMIT", "AuditRequest"]


class AuditRequest(BaseModel):
    """Which audit records to read, newest first. Without ``memory_id`` it reads the whole log
    (an admin's query); ``scope`` then narrows it to one scope. A window with ``until`` at or
    before ``since`` holds nothing."""

    model_config = ConfigDict(extra="forbid")

    memory_id: Annotated[StrictStr, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="The memory (or token) whose records to read; it may be gone."
    )
    scope: ScopeName | None = None
    action: Annotated[list[AuditAction], Field(min_length=1, max_length=len(AUDITED_ACTIONS))] | None = Field(
        default=None, description="Only these actions."
    )
    principal: Annotated[StrictStr, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="Only records of what this principal did (or was refused)."
    )
    since: Timestamp | None = None
    until: Timestamp | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_AUDIT_LIMIT)] = 100
