"""REST calls on one running hivemem server, with the standard library only: the CLI's client mode
and the client hooks spend most of their time importing, and this module imports nearly nothing."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from hivemem.errors import HivememError
from hivemem.scope import SCOPE_HEADER

__all__ = ["Remote", "RemoteError", "configured_server"]


_PIECE_BYTES = 64 * 1024


def configured_server(server_url: str, port: int) -> str:
    """The server a client of this machine calls by default: ``HIVEMEM_SERVER_URL`` when it names
    one, else the local ``hivemem serve`` on ``HIVEMEM_PORT``."""
    if server_url and server_url != "off":
        return server_url.rstrip("/")
    return f"http://127.0.0.1:{port}"


class RemoteError(HivememError):
    """The server refused or failed the call; the message is its own."""


class Remote:
    """REST calls on one server, as the CLI's caller (its token, its project's scope). The standard
    library's HTTP client: a CLI call spends most of its time importing, and httpx costs 0.1 s more."""

    def __init__(
        self,
        url: str,
        *,
        token: str,
        scope: str | None,
        timeout_s: float = 60.0,
        deadline: float | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        """``timeout_s`` bounds each wait on the socket; ``deadline`` (a ``time.monotonic()``
        instant) every call as a whole, so a server that sends a byte at a time cannot hold the
        caller; ``max_answer_bytes`` what one answer may be."""
        self._url = url
        self._timeout_s = timeout_s
        self._deadline = deadline
        self._max_answer_bytes = max_answer_bytes
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        if scope is not None:
            self._headers[SCOPE_HEADER] = scope

    def _call(self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(f"{self._url}{path}{query}", data=data, method=method, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self._wait_s()) as answer:
                return json.loads(self._read(answer))
        except urllib.error.HTTPError as exc:
            refusal = _refusal(exc)
            if exc.code == 401:  # the server's words name its header; a CLI user sets a variable
                sent = "Authorization" in self._headers
                refusal += (
                    " (the token this client sent was refused)"
                    if sent
                    else " (this client sends HIVEMEM_TOKEN, which is not set; `hivemem token create` makes one)"
                )
            raise RemoteError(refusal) from None
        except (OSError, ValueError) as exc:
            raise RemoteError(f"the server at {self._url} did not answer: {exc}") from exc

    def _wait_s(self) -> float:
        if self._deadline is None:
            return self._timeout_s
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise RemoteError(f"the server at {self._url} did not answer in time")
        return min(self._timeout_s, left)

    def _read(self, answer: Any) -> bytes:
        """The answer's body, a piece at a time (``read1``: whatever has arrived), within the
        deadline and the size cap."""
        pieces: list[bytes] = []
        held = 0
        while True:
            self._wait_s()
            piece = answer.read1(_PIECE_BYTES)
            if not piece:
                return b"".join(pieces)
            held += len(piece)
            if self._max_answer_bytes is not None and held > self._max_answer_bytes:
                raise RemoteError(f"the server at {self._url} answered more than {self._max_answer_bytes} bytes")
            pieces.append(piece)

    # Bodies are sent as the CLI read them: the server validates them (its answer names what is
    # wrong), and the CLI spares the import of every request schema.
    def memorize(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/memories", body=body)
        return result

    def remember(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/remember", body=body)
        return result

    def get(self, memory_id: str, scope: str | None) -> dict[str, Any]:
        params = {} if scope is None else {"scope": scope}
        result: dict[str, Any] = self._call("GET", f"/v1/memories/{memory_id}", params=params)
        return result

    def forget(self, memory_id: str, *, confirm: bool, scope: str | None) -> dict[str, Any]:
        params = {"confirm": str(confirm).lower()} | ({} if scope is None else {"scope": scope})
        result: dict[str, Any] = self._call("DELETE", f"/v1/memories/{memory_id}", params=params)
        return result

    def briefing(self, scope: str | None) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/briefing", params={} if scope is None else {"scope": scope})
        return result

    def handoff(self, scope: str | None) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self._call(
            "GET", "/v1/handoff", params={} if scope is None else {"scope": scope}
        )
        return result

    def forget_matching(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/memories/forget", body=body)
        return result

    def jobs(self, params: dict[str, str]) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/v1/jobs", params=params)
        return result

    def job(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}")
        return result


def _refusal(exc: urllib.error.HTTPError) -> str:
    """The server's own words for a refusal (its error body, the first 64 KB of it), else the status."""
    try:
        body = json.loads(exc.read(_PIECE_BYTES))
        return f"{body.get('error', exc.code)}: {body.get('message', '')}"
    except (ValueError, AttributeError):
        return f"{exc.code}: {exc.reason}"
