"""The thread of an MCP session: what an agent memorizes in one session is one thread by default.

Recall reads a memory with its neighbours in its thread and lifts the other memories of the thread
it finds best (:mod:`hivemem.thread_context`), so the decisions and findings of one working
session give each other context without the agent naming a thread. A call that passes ``thread``
keeps its own.

Where a session is known:

- **stdio** (one process per agent session) and in-memory clients: the connection. The SDK makes a
  new session object for every request, so the name is kept in the connection's lifespan state,
  which lives as long as the connection.
- **HTTP**: MCP 2026-07-28 is stateless: no handshake, no ``Mcp-Session-Id``. A working session is
  then the calls of one principal, from one client (its ``clientInfo`` name), in one scope, with
  no pause longer than ``IDLE_S`` between them; a longer pause starts a new thread. A client of an
  older protocol that still sends ``Mcp-Session-Id`` is grouped by it. These are kept per server
  process (a cluster behind a load balancer may split one session into a thread per process).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["IDLE_S", "SessionThreads"]

IDLE_S = 3600.0  # a pause this long between an HTTP client's calls ends its working session
_KEPT = 10_000  # HTTP sessions remembered at once (the least recently active are forgotten first)
_PREFIX = "mcp-session-"
_SESSION_HEADER = "mcp-session-id"
_STATE_KEY = "hivemem_session_thread"
_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
_MAX_ID = 64  # characters of a client-sent session id kept in the name (thread names take 200)


def _new_name() -> str:
    return _PREFIX + uuid.uuid4().hex[:16]


class SessionThreads:
    """Names the thread of each MCP session (see the module). Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._http: OrderedDict[tuple[str, str, str], tuple[str, float]] = OrderedDict()
        self._process = _new_name()  # a connection that keeps no state: one per process

    def of(
        self,
        *,
        headers: Mapping[str, str] | None,
        connection_state: Any,
        meta: Mapping[str, Any] | None,
        principal: str,
        scope: str,
    ) -> str:
        """The thread of the session the call came in."""
        if headers is None:  # stdio or in memory: the connection is the session
            if isinstance(connection_state, dict):
                name: str = connection_state.setdefault(_STATE_KEY, _new_name())
                return name
            return self._process
        named = headers.get(_SESSION_HEADER, "").strip()
        if named:
            return _PREFIX + "".join(c for c in named[:_MAX_ID] if c.isalnum() or c in "-_.")
        client_info = (meta or {}).get(_CLIENT_INFO)
        client = str(client_info.get("name", "")) if isinstance(client_info, Mapping) else ""
        return self._working_session((principal, client, scope))

    def _working_session(self, key: tuple[str, str, str]) -> str:
        now = self._clock()
        with self._lock:
            held = self._http.pop(key, None)
            name = held[0] if held is not None and now - held[1] < IDLE_S else _new_name()
            self._http[key] = (name, now)
            while len(self._http) > _KEPT:
                self._http.popitem(last=False)
            return name
