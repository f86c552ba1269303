"""The MCP server: tools ``memorize``, ``remember``, ``job``, ``forget``, ``memory``, ``handoff``,
``memory_status``, ``knowledge`` (and ``admin``, listed to an administrator's token), over stdio and at /mcp.

Tool descriptions are product text: the agent reads them to decide when and how to call, and
pays for every word in its context, so they say what matters and nothing else, and they say the
truth about where memories go. Each session has a :class:`SessionScope`:

- stdio, ``hivemem mcp --scope S``: locked to ``S`` (``scope`` is not even in the schemas);
- stdio without ``--scope``: the scope of the working directory, which a ``scope`` argument may
  override;
- HTTP: the project the client names once, in its MCP configuration (the ``X-Hivemem-Scope``
  header, or the endpoint ``/mcp/<scope>``): locked to it. A client that names none works in no
  project: it must pass ``scope`` (or ``global``) on each write.

Tool schemas carry every limit the server enforces, and an argument a tool does not take is
refused, not ignored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ConfigDict
from pydantic import ValidationError as PydanticValidationError

import hivemem
from api.errors import tool_error
from api.http.denials import denial_recorder
from api.mcp.compact import compact_answer, compact_schema
from api.mcp.host import HostingServer, ToolCalls, ToolHost
from api.mcp.instructions import INSTRUCTIONS, session_instructions
from api.mcp.knowledge import knowledge_tool
from api.mcp.session_thread import SessionThreads
from api.mcp.tools import ADMIN, FORGET, HANDOFF, JOB, MEMORIZE, MEMORY, MEMORY_STATUS, REMEMBER, memory_tools
from api.process.logs import configure_process_logging
from api.process.shutdown import sigterm_as_sigint
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.access import Access, Role
from hivemem.config import Settings
from hivemem.errors import ValidationError
from hivemem.model import GLOBAL_SCOPE
from hivemem.scope import SCOPE_HEADER, derive_scope, validate_scope

__all__ = ["INSTRUCTIONS", "SessionScope", "build_mcp", "run_stdio"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionScope:
    """Where one MCP session works: its project scope (None: none named) and whether it is locked."""

    scope: str | None
    locked: bool = False

    def caller(self) -> Caller:
        """The service's caller for this session."""
        return Caller(principal="local", default_scope=self.scope, locked=self.locked)

    def writes_to(self) -> str:
        """Where a memorize goes, in words."""
        if self.scope is None:
            return (
                "This connection names no project: pass `scope` (the project's, e.g. `github.com/acme/api`), or "
                "`global: true` for every project; a memorize with neither is refused."
            )
        where = "global" if self.scope == GLOBAL_SCOPE else f"project scope `{self.scope}`"
        if self.locked:
            return f"This session works in {where}; `global: true` stores a memory for every project instead."
        return (
            f"Memories go to {where} (this session's default) unless you pass `scope`; `global: true` stores "
            "one for every project."
        )

    def reads_from(self) -> str:
        """What a remember searches, in words."""
        return self._said(
            "Searches global memories, or `scope` plus global when you pass one.",
            "Searches global memories.",
            "Searches project scope {scope} plus global memories.",
        )

    def works_in(self) -> str:
        """Which one scope a handoff or a status works in, in words."""
        return self._said(
            "Works in the global scope, or in `scope` when you pass one (a handoff save needs it).",
            "Works in the global scope.",
            "Works in project scope {scope}.",
        )

    def finds_by_id(self) -> str:
        """Where a memory named by its id is looked for, in words."""
        return self._said(
            "Finds the memory among global ones, or in `scope` and global when you pass one.",
            "Finds the memory among global ones.",
            "Finds the memory in project scope {scope} or global.",
        )

    def _said(self, unnamed: str, global_only: str, project: str) -> str:
        """The sentence for this session: no project named, the global scope, or a project (its
        ``{scope}`` filled with the name and, unless locked, how to pass another)."""
        if self.scope is None:
            return unnamed
        if self.scope == GLOBAL_SCOPE:
            return global_only
        override = "" if self.locked else " (or `scope`, when you pass one)"
        return project.format(scope=f"`{self.scope}`{override}")


def http_session(headers: Mapping[str, str] | None, fixed: SessionScope | None) -> SessionScope:
    """The session of one request: ``fixed`` (stdio, in-memory), else the project the HTTP client
    names in ``X-Hivemem-Scope`` (locked), else no project."""
    if fixed is not None:
        return fixed
    wanted = SCOPE_HEADER.lower()
    named = next((value for key, value in (headers or {}).items() if key.lower() == wanted), None)
    if named is None:
        return SessionScope(None)
    return SessionScope(validate_scope(named), locked=True)


_TEMPLATES = {
    "memorize": MEMORIZE,
    "memory": MEMORY,
    "admin": ADMIN,
    "remember": REMEMBER,
    "forget": FORGET,
    "job": JOB,
    "handoff": HANDOFF,
    "memory_status": MEMORY_STATUS,
}
# The tools listed only to a token that administers every scope.
_ADMIN_TOOLS = ("admin",)
# The tools whose `scope` argument a locked session does not offer.
_SCOPED_TOOLS = ("memorize", "remember", "forget", "knowledge", "handoff", "memory_status", "memory")


class _SessionScopes(ServerMiddleware[Any]):
    """Shows each session its own instructions (its scope and the others it may read, counted) and
    its own tools: descriptions that name its scope, and no ``scope`` argument when it is locked."""

    def __init__(self, fixed: SessionScope | None, service: Callable[[], MemoryService]) -> None:
        self._fixed = fixed
        self._service = service

    def _counts(self, access: Access | None) -> dict[str, int]:
        """Memories per scope the session's caller may read (one store read)."""
        readable = Caller() if access is None else Caller.of(access)
        tallies = self._service().store.tally_by_scope()
        return {s: sum(t.values()) for s, t in tallies.items() if readable.may(s, Role.READ)}

    def _session(self, ctx: ServerRequestContext[Any, Any]) -> SessionScope:
        try:
            return http_session(getattr(ctx.request, "headers", None), self._fixed)
        except ValidationError:
            return SessionScope(None)  # the call itself reports the malformed header

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        listed = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(listed, dict):  # legacy and 2026 handshakes
            grants = getattr(getattr(ctx.request, "state", None), "access", None)
            try:
                counts = await anyio.to_thread.run_sync(self._counts, grants)
            except Exception:  # instructions are a courtesy: no store yet (still loading, down), the plain text
                log.debug("the session's scopes could not be counted for its instructions", exc_info=True)
                return listed
            return {**listed, "instructions": session_instructions(self._session(ctx).scope, counts)}
        if ctx.method != "tools/list" or not isinstance(listed, dict):
            return listed
        session = self._session(ctx)
        texts = {
            "writes_to": session.writes_to(),
            "reads_from": session.reads_from(),
            "works_in": session.works_in(),
            "finds_by_id": session.finds_by_id(),
        }
        # The admin tool is shown to an administrator's token only: every other session would pay
        # for its description and could not use it (the CLI is the local administrator's).
        access: Access | None = getattr(getattr(ctx.request, "state", None), "access", None)
        administers = access is not None and access.manages_tokens
        tools = []
        for tool in listed.get("tools", []):
            name = tool.get("name")
            if name in _ADMIN_TOOLS and not administers:
                continue
            if name in _TEMPLATES:
                tool = {**tool, "description": _TEMPLATES[name].format(**texts)}
            if session.locked and name in _SCOPED_TOOLS:
                schema = tool["inputSchema"]
                tool["inputSchema"] = {
                    **schema,
                    "properties": {k: v for k, v in schema["properties"].items() if k != "scope"},
                }
            tools.append(tool)
        return {**listed, "tools": tools}


class _ToolForAgents(Tool):
    """A tool whose invalid arguments are refused as the REST API refuses them ("invalid input:
    query: …", one line per field), not with the SDK's text: pydantic's whole report, with its
    model's name, type tags and links, which an agent pays for and can hardly act on. Its answers'
    text is one line of JSON (:func:`api.mcp.compact.compact_answer`)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return compact_answer(await super().run(arguments, context, convert_result))
        except ToolError as exc:
            # The SDK raises a failed argument validation as a ToolError caused by pydantic's error
            # (our tools' own failures arrive caused by the ToolError they raised: left as they are).
            if isinstance(exc.__cause__, PydanticValidationError):
                raise ToolError(f"Error executing tool {self.name}: {tool_error(exc.__cause__)}") from exc.__cause__
            raise


def _refusing_unknown_arguments(tool: Tool) -> Tool:
    """``tool``, refusing arguments it does not take (the SDK's argument model ignores them),
    saying clearly what is wrong with the arguments it refuses, and listed with the schema an
    agent reads (:func:`api.mcp.compact.compact_schema`)."""
    base = tool.fn_metadata.arg_model
    strict = type(base.__name__, (base,), {"model_config": ConfigDict(**base.model_config, extra="forbid")})
    tool.fn_metadata.arg_model = strict
    tool.parameters = {**compact_schema(tool.parameters), "additionalProperties": False}
    return _ToolForAgents.model_construct(**dict(tool.__dict__))


def build_mcp(
    service: Callable[[], MemoryService],
    *,
    session: SessionScope | None = None,
    on_tool_call: ToolCalls | None = None,
) -> MCPServer:
    """The MCP server over ``service()``.

    ``session`` fixes every call's scope (stdio, and in-memory clients); None reads it from each
    HTTP request (:func:`http_session`). Schemas carry the input limits in force.
    """

    def caller(ctx: Context[Any, Any]) -> Caller:
        base = http_session(ctx.headers, session).caller()
        # The token's grants, put in the request's state by api.http.auth.AuthGate (HTTP only).
        state = getattr(getattr(ctx.request_context, "request", None), "state", None)
        access: Access | None = getattr(state, "access", None)
        if access is None:
            return base
        refusals = denial_recorder(service().store, "MCP tools/call")
        return Caller.of(access, scope=base.default_scope, locked=base.locked, on_denied=refusals)

    host = ToolHost(service, caller, SessionThreads(), over_stdio=session is not None, on_tool_call=on_tool_call)
    tools = [*memory_tools(), knowledge_tool(over_stdio=host.over_stdio)]
    # The SDK logs every session-manager start at INFO; the server logs what matters itself.
    server = HostingServer(
        host,
        name="hivemem",
        version=hivemem.__version__,
        instructions=INSTRUCTIONS,
        tools=[_refusing_unknown_arguments(tool) for tool in tools],
        log_level="WARNING",
        middleware=[_SessionScopes(session, service)],
    )
    return server


_WARM_UP_JOIN_S = 20.0  # how long a stopping session waits for the warm-up (a model load, the store's index)


def _warm_up(service: MemoryService) -> None:
    try:
        service.parts.warm_up()
    except Exception:  # the first tool call reports the same error to the agent
        log.warning("loading the embedding model failed", exc_info=True)


def run_stdio(settings: Settings, *, scope: str | None = None) -> None:
    """Serve MCP on stdin/stdout: locked to ``scope`` when given, else in the working directory's
    scope (which a tool call may override)."""
    configure_process_logging(settings.log_level)
    session = (
        SessionScope(derive_scope(Path.cwd())) if scope is None else SessionScope(validate_scope(scope), locked=True)
    )
    service = MemoryService.from_settings(settings)
    # Load the model while the client handshakes, so the first tool call doesn't wait for it.
    warming = threading.Thread(target=_warm_up, args=(service,), name="hivemem-warm-up", daemon=True)
    warming.start()
    service.start_background()
    server = build_mcp(lambda: service, session=session)
    try:
        # SIGTERM ends the session as Ctrl-C does: the transport unwinds, then the store closes.
        with sigterm_as_sigint():
            server.run("stdio")
    except KeyboardInterrupt:
        log.info("stopped by a signal")
    finally:
        # A session stopped as it starts: let the warm-up finish its read of the store first. A
        # connection closed in the middle of a query closes only when the query ends, which a
        # process exiting meanwhile never sees, leaving the store's write-ahead log behind.
        warming.join(_WARM_UP_JOIN_S)
        service.close()
