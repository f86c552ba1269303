"""The gate every HTTP request passes first: which host it names, which page sent it, how big it is.

One ASGI middleware in front of everything the server answers (REST, MCP, health, and the
dashboard to come), so the checks live in one place:

- **Host** (DNS rebinding): a web page that makes its own name resolve to 127.0.0.1 can reach a
  local server, but its requests still name that page's host. Only the bind address, the loopback
  names and ``HIVEMEM_ALLOWED_HOSTS`` are answered; any other ``Host`` gets 421.
- **Origin** (cross-site requests): a browser names the page that sent a request. Same-origin
  requests and the origins in ``HIVEMEM_CORS_ORIGINS`` pass; any other origin gets 403 before the
  request reaches a route, so a page cannot even write blind.
- **Size**: a body over ``HIVEMEM_MAX_REQUEST_BYTES`` (``HIVEMEM_MAX_BULK_REQUEST_BYTES`` for a
  bulk memorize) gets 413, by its ``Content-Length`` before it is read, or as soon as a streamed
  body passes the limit.
- **Depth**: a JSON body nested deeper than :data:`hivemem.json_depth.MAX_JSON_DEPTH` gets 400
  before anything parses it (a parser recurses once a level). An import file is measured line by
  line where it is read, and a document is no JSON.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.exceptions import HTTPException

from hivemem.config import LOOPBACK_HOSTS, WILDCARD_HOSTS, Settings
from hivemem.json_depth import too_deep

__all__ = [
    "BULK_PATH",
    "DOCUMENT_PATHS",
    "RequestGuard",
    "RequestTooDeep",
    "RequestTooLarge",
    "host_allowed",
    "send_error",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BULK_PATH = "/v1/memories/bulk"
# An export file sent back: as large as a bulk write.
IMPORT_PATH = "/v1/import"
# Documents arrive whole: their bodies get the document size limit, not the request one.
DOCUMENT_PATHS = ("/v1/knowledge/documents", "/v1/knowledge/store")


class RequestTooLarge(HTTPException):
    """A streamed request body passed its size limit while it was read (an HTTP 413).

    An HTTP exception, so that FastAPI's body parsing passes it on instead of answering 400.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes")
        self.limit = limit


class RequestTooDeep(HTTPException):
    """A JSON body nests deeper than hivemem reads (an HTTP 400), found before it was parsed."""

    def __init__(self, problem: str) -> None:
        super().__init__(400, f"the request body {problem}")


# Measured on the event loop below this size (well under a millisecond), on a thread above it.
_DEPTH_INLINE_BYTES = 64 * 1024


def _json_body(headers: dict[str, str], path: str | None) -> bool:
    """Whether the body is read as JSON: any but a document's or an import file's (JSON lines,
    measured a line at a time), sent as JSON or with no type at all."""
    if path in DOCUMENT_PATHS or path == IMPORT_PATH:
        return False
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    return kind in ("", "application/json") or kind.endswith("+json")


async def _depth_problem(body: bytes) -> str | None:
    if len(body) <= _DEPTH_INLINE_BYTES:
        return too_deep(body)
    return await anyio.to_thread.run_sync(too_deep, body)


# An authority as RFC 9110 allows it in Host: a name or IPv4 address, or an IPv6 address in
# brackets, then an optional port of digits. Anything else (userinfo, a path, a second colon) is no
# host at all: "127.0.0.1:8765@evil.example" was read as 127.0.0.1.
_AUTHORITY = re.compile(r"(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9._-]+))(?::[0-9]{1,5})?")


def _host_name(authority: str) -> str:
    """The host of a ``Host`` header or an origin's authority: lower case, no port, no brackets;
    empty when it is not a well-formed authority."""
    parsed = _AUTHORITY.fullmatch(authority.strip().lower())
    if parsed is None:
        return ""
    return parsed["ipv6"] or parsed["name"]


def host_allowed(name: str, allowed: tuple[str, ...]) -> bool:
    """True when ``name`` is one of ``allowed``, where ``*.example.com`` matches every subdomain."""
    name = name.rstrip(".")
    return any(
        name == pattern or (pattern.startswith("*.") and fnmatch.fnmatchcase(name, pattern)) for pattern in allowed
    )


@dataclass(frozen=True, slots=True)
class _Policy:
    hosts: tuple[str, ...]
    origins: frozenset[str]
    max_bytes: int
    max_bulk_bytes: int
    max_document_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> _Policy:
        bind = () if settings.host in WILDCARD_HOSTS else (settings.host.lower(),)
        return cls(
            hosts=(*LOOPBACK_HOSTS, *bind, *settings.allowed_hosts),
            origins=frozenset(settings.cors_origins),
            max_bytes=settings.max_request_bytes,
            max_bulk_bytes=settings.max_bulk_request_bytes,
            max_document_bytes=settings.knowledge_max_document_bytes,
        )


def _headers(scope: Scope) -> dict[str, str]:
    # Repeated headers: the first wins, as in Starlette's `Headers.get`.
    found: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


async def send_error(
    send: Send, status: int, code: str, message: str, *, headers: dict[str, str] | None = None, **extra: str
) -> None:
    """Answer with hivemem's error body (``{error, message, …}``) from raw ASGI, before any route."""
    body = json.dumps({"error": code, "message": message, **extra}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.encode("latin-1"), value.encode("latin-1")) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """ASGI middleware: refuses foreign hosts (421), foreign origins (403), oversized bodies (413)
    and JSON bodies nested too deep (400)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.policy = _Policy.of(settings)

    def _origin_allowed(self, origin: str, host_header: str) -> bool:
        if origin in self.policy.origins:
            return True
        parts = urlsplit(origin)
        # Same origin: the page was served by this server, under a name it answers to.
        return parts.scheme in ("http", "https") and parts.netloc == host_header.strip().lower()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if not host or not host_allowed(_host_name(host), self.policy.hosts):
            await send_error(
                send,
                421,
                "host_not_allowed",
                f"this server does not answer to host {_host_name(host) or host[:100] or '(none)'!r}; "
                "add it to HIVEMEM_ALLOWED_HOSTS if it is this server's name",
            )
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin.strip().lower().rstrip("/"), host):
            await send_error(
                send,
                403,
                "origin_not_allowed",
                f"requests from web pages of {origin!r} are refused; list the origin in HIVEMEM_CORS_ORIGINS "
                "to allow it",
            )
            return
        path = scope.get("path")
        limit = (
            self.policy.max_bulk_bytes
            if path in (BULK_PATH, IMPORT_PATH)
            else self.policy.max_document_bytes
            if path in DOCUMENT_PATHS
            else self.policy.max_bytes
        )
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            message = f"the request body is larger than {limit} bytes" if declared.isdigit() else "bad Content-Length"
            await send_error(send, 413 if declared.isdigit() else 400, "payload_too_large", message)
            return
        await self._bounded(scope, receive, send, limit, measure_depth=_json_body(headers, path))

    async def _bounded(self, scope: Scope, receive: Receive, send: Send, limit: int, *, measure_depth: bool) -> None:
        received = 0
        started = False
        chunks: list[bytes] = []

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                received += len(chunk)
                if received > limit:
                    raise RequestTooLarge(limit)
                if measure_depth:
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        problem = await _depth_problem(b"".join(chunks))
                        chunks.clear()
                        if problem is not None:
                            raise RequestTooDeep(problem)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except RequestTooLarge as exc:
            # Raised while an inner app read the body: nothing was done with it yet.
            if started:
                raise
            await send_error(send, 413, "payload_too_large", str(exc.detail))
        except RequestTooDeep as exc:
            if started:
                raise
            await send_error(send, 400, "malformed_json", str(exc.detail))
