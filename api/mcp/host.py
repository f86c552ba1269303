"""What the MCP tools of one server call, reached from each call's context.

The tools are module functions (:mod:`api.mcp.tools`, :mod:`api.mcp.knowledge`); what differs
from one server to another (its service, how a call's caller is known, its sessions' threads, its
metrics) is the :class:`ToolHost` the server carries, read back with :func:`host_of`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from api.mcp.session_thread import SessionThreads
from api.services.caller import Caller
from api.services.memories import MemoryService

__all__ = ["HostingServer", "ToolCalls", "ToolHost", "host_of"]

# Told of every tool call: the tool's name, its seconds, and whether it failed (a server's metrics).
ToolCalls = Callable[[str, float, bool], None]


@dataclass(frozen=True, slots=True)
class ToolHost:
    """One server's service (``service()``), each call's caller, its sessions' threads, whether it
    serves stdio (the knowledge tool reads local files then), and its metrics hook."""

    service: Callable[[], MemoryService]
    caller: Callable[[Context[Any, Any]], Caller]
    threads: SessionThreads
    over_stdio: bool = False
    on_tool_call: ToolCalls | None = None


class HostingServer(MCPServer):
    """An MCP server that carries the :class:`ToolHost` its tools call."""

    def __init__(self, host: ToolHost, **options: Any) -> None:
        super().__init__(**options)
        self.host = host


def host_of(ctx: Context[Any, Any]) -> ToolHost:
    """The host of the server a tool call came to."""
    server = ctx.mcp_server
    if not isinstance(server, HostingServer):
        raise TypeError("hivemem's tools run on a HostingServer")
    return server.host
