"""The MCP server: tools ``memorize``, ``remember``, ``job``, ``forget``, over stdio and mounted at /mcp.

Tool descriptions are product text: the agent reads them to decide when and how to call, and
pays for every word in its context, so they say what matters and nothing else.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import ToolAnnotations
from pydantic import Field

from api.errors import tool_error
from api.service import Caller, MemoryService
from hivemem.config import Settings
from hivemem.model import GLOBAL_SCOPE, MemoryType, Source
from hivemem.schemas import MemoryCreate, RecallRequest
from hivemem.scope import derive_scope

__all__ = ["INSTRUCTIONS", "build_mcp", "run_stdio"]

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "hivemem is this team's long-term memory. Call `remember` before you decide, design, debug or "
    "ask the user something they may already have told someone; call `memorize` when you learn "
    "something worth knowing next time (a decision and its reason, a fix and its root cause, a "
    "preference, a convention). Memories are scoped to the current project; global ones are shared."
)

MEMORIZE = """Save one durable memory for this project: a decision and why, a bug fix and its root cause, \
a failure, a user preference, a convention, a fact that took effort to find.
Call `remember` first: if it is already known, don't store it again (identical content only reinforces \
the existing memory).
One idea per memory. Title: short and specific (5-200 chars). Content: self-contained, readable months \
later without this conversation (10-10000 chars): what, why, where (files, components).
Importance: 0.9-1.0 critical (security, data loss, hard constraints); 0.7-0.8 decisions, architecture; \
0.5 normal facts and fixes; 0.2-0.3 minor details.
source: `user_confirmed` when the user stated or approved it, `agent_inferred` when you concluded it.
Scope defaults to the current project; `global: true` stores it for every project (personal preferences, \
general lessons).
An answer without `outcome` means the memory is still queued: `job` tells when it is stored."""

JOB = """State of a memorize job by its `job_id`: queued, running, done (with each memory's id and outcome) \
or failed (with the error)."""

REMEMBER = """Recall memories by meaning. Use it before deciding, designing, debugging, or asking the user \
something they may have said before, and before `memorize` (to avoid duplicates).
Give 1-5 queries phrased differently (the error message, the component, the question); results are fused.
Searches the current project plus global memories, best first. [CONFIRMED] results were confirmed by a \
user; [INFERRED] ones were concluded by an agent: verify those before relying on them.
Optional filters: memory_types, tags, created_after/created_before (ISO 8601 with timezone)."""

FORGET = """Delete one memory for good (the deletion is audited). Only for memories that are wrong, \
harmful or stored by mistake. Don't forget things for being old: old memories fade from results on \
their own and may still matter. Requires `confirm: true`; take the id from `remember`."""


def _reporting_errors(tool: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The tool, with every failure turned into an MCP tool error an agent can act on."""

    @functools.wraps(tool)
    def reporting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return tool(*args, **kwargs)
        except Exception as exc:
            raise tool_error(exc) from exc

    return reporting


def build_mcp(service: Callable[[], MemoryService], *, default_scope: str = GLOBAL_SCOPE) -> MCPServer:
    """The MCP server over ``service()``; tool calls without ``scope`` use ``default_scope``."""

    def caller() -> Caller:
        return Caller(principal="local", default_scope=default_scope)

    def memorize(
        title: Annotated[str, Field(description="Short, specific title (5-200 chars).")],
        content: Annotated[str, Field(description="Self-contained content (10-10000 chars).")],
        memory_type: Annotated[MemoryType, Field(description="Kind of memory.")] = MemoryType.FACT,
        importance: Annotated[float, Field(description="0-1, see the guide above.")] = 0.5,
        source: Annotated[Source, Field(description="Who vouches for it.")] = Source.AGENT_INFERRED,
        tags: Annotated[list[str] | None, Field(description="Keywords for filtering.")] = None,
        related_files: Annotated[list[str] | None, Field(description="Paths this memory is about.")] = None,
        scope: Annotated[str | None, Field(description="Override the project scope.")] = None,
        global_: Annotated[bool, Field(alias="global", description="Store for every project.")] = False,
    ) -> dict[str, Any]:
        request = MemoryCreate(
            title=title,
            content=content,
            memory_type=memory_type,
            importance=importance,
            source=source,
            tags=tags or [],
            related_files=related_files or [],
            scope=GLOBAL_SCOPE if global_ else scope,
        )
        return service().memorize(request, caller()).model_dump(mode="json")

    def remember(
        query: Annotated[str | list[str], Field(description="A query, or 1-5 queries to fuse.")],
        limit: Annotated[int, Field(description="How many results (1-100).")] = 10,
        memory_types: Annotated[list[MemoryType] | None, Field(description="Only these kinds.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with one of these tags.")] = None,
        created_after: Annotated[datetime | None, Field(description="ISO 8601 with timezone.")] = None,
        created_before: Annotated[datetime | None, Field(description="ISO 8601 with timezone.")] = None,
        scope: Annotated[str | None, Field(description="Override the project scope.")] = None,
    ) -> dict[str, Any]:
        request = RecallRequest(
            query=query,
            limit=limit,
            memory_types=memory_types,
            tags=tags,
            created_after=created_after,
            created_before=created_before,
            scope=scope,
        )
        return service().remember(request, caller()).model_dump(mode="json", exclude_none=True)

    def forget(
        id: Annotated[str, Field(description="The memory id, from remember.")],
        confirm: Annotated[bool, Field(description="Must be true.")] = False,
    ) -> dict[str, Any]:
        removed = service().forget(id, confirm=confirm, caller=caller())
        return {"forgotten": removed.id, "title": removed.title}

    def job(
        job_id: Annotated[str, Field(description="The job_id a memorize answer gave.")],
    ) -> dict[str, Any]:
        return service().job(job_id).model_dump(mode="json")

    memorize_tool = Tool.from_function(
        memorize,
        description=MEMORIZE,
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True),
    )

    # `global` is a Python keyword: the schema names it `global`, the function takes `global_`.
    @functools.wraps(memorize)
    def memorize_by_wire_names(**kwargs: Any) -> dict[str, Any]:
        if "global" in kwargs:
            kwargs["global_"] = kwargs.pop("global")
        return memorize(**kwargs)

    memorize_tool.fn = _reporting_errors(memorize_by_wire_names)
    tools = [
        memorize_tool,
        Tool.from_function(
            _reporting_errors(remember),
            description=REMEMBER,
            annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
        ),
        Tool.from_function(
            _reporting_errors(job),
            description=JOB,
            annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
        ),
        Tool.from_function(
            _reporting_errors(forget),
            description=FORGET,
            annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False),
        ),
    ]
    # The SDK logs every session-manager start at INFO; the server logs what matters itself.
    return MCPServer(name="hivemem", instructions=INSTRUCTIONS, tools=tools, log_level="WARNING")


def _warm_up(service: MemoryService) -> None:
    try:
        service.warm_up()
    except Exception:  # the first tool call reports the same error to the agent
        log.warning("loading the embedding model failed", exc_info=True)


def run_stdio(settings: Settings, *, scope: str | None = None) -> None:
    """Serve MCP on stdin/stdout in the scope given, or the one derived from the working directory."""
    service = MemoryService.from_settings(settings)
    # Load the model while the client handshakes, so the first tool call doesn't wait for it.
    threading.Thread(target=_warm_up, args=(service,), name="hivemem-warm-up", daemon=True).start()
    try:
        server = build_mcp(lambda: service, default_scope=derive_scope(Path.cwd()) if scope is None else scope)
        server.run("stdio")
    finally:
        service.close()
