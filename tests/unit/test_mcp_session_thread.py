"""Which MCP calls are one session's thread (api.mcp.session_thread)."""

from __future__ import annotations

from typing import Any

from api.mcp.session_thread import IDLE_S, SessionThreads

HTTP: dict[str, str] = {"host": "127.0.0.1:8765"}  # a request over HTTP: headers, but no session id


def meta(client: str) -> dict[str, Any]:
    return {"io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"}}


def test_http_calls_are_one_session_until_a_long_pause() -> None:
    now = [0.0]
    threads = SessionThreads(clock=lambda: now[0])

    def call(principal: str = "alice", client: str = "claude-code", scope: str = "acme/api") -> str:
        return threads.of(headers=HTTP, connection_state=None, meta=meta(client), principal=principal, scope=scope)

    first = call()
    now[0] += IDLE_S - 1
    assert call() == first  # a pause shorter than IDLE_S: the same working session
    assert call(principal="bob") != first  # another principal
    assert call(client="cursor") != first  # another client of the same person
    assert call(scope="acme/web") != first  # another project
    now[0] += IDLE_S
    later = call()
    assert later != first and later.startswith("mcp-session-")  # after a long pause, a new thread
    assert call() == later


def test_a_connection_is_a_session_and_a_sent_session_id_is_kept() -> None:
    threads = SessionThreads()
    state_a: dict[str, Any] = {}
    state_b: dict[str, Any] = {}
    of_a = threads.of(headers=None, connection_state=state_a, meta=None, principal="", scope="s")
    assert threads.of(headers=None, connection_state=state_a, meta=None, principal="", scope="s") == of_a
    assert threads.of(headers=None, connection_state=state_b, meta=None, principal="", scope="s") != of_a
    older_protocol = {"mcp-session-id": "abc123\n<x>"}
    assert (
        threads.of(headers=older_protocol, connection_state=None, meta=None, principal="", scope="s")
        == "mcp-session-abc123x"
    )
