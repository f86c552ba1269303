"""The MCP endpoints over HTTP: ``/mcp`` and ``/mcp/<scope>``, one project per client configuration.

A client names its project once, where it is configured: the ``X-Hivemem-Scope`` header, or, for
clients that take a URL and no headers, the endpoint ``/mcp/<scope>``. Both reach the same MCP
session manager; the path form becomes the header, which :func:`api.mcp.server.http_session`
reads on every call. A malformed scope is refused here, before any MCP message is read.
"""

from __future__ import annotations

from typing import Any

from api.http.guard import ASGIApp, Receive, Scope, Send, send_error
from hivemem.errors import ValidationError
from hivemem.scope import SCOPE_HEADER, validate_scope

__all__ = ["ProjectEndpoint"]

_HEADER = SCOPE_HEADER.lower().encode("latin-1")  # ASGI header names are lower case


async def _refuse(send: Send, message: str) -> None:
    await send_error(send, 422, "validation_error", message, field="scope")


class ProjectEndpoint:
    """ASGI app: checks the project a request names, then hands it to the MCP transport at ``/mcp``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path_project: str | None = scope.get("path_params", {}).get("project")
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", ()))
        named = [value.decode("latin-1") for key, value in headers if key.lower() == _HEADER]
        candidates = ([] if path_project is None else [path_project]) + named
        if len(set(candidates)) > 1:
            await _refuse(send, f"the request names more than one project: {sorted(set(candidates))}")
            return
        if path_project is not None and not path_project:
            await _refuse(send, "name the project after /mcp/, e.g. /mcp/github.com/acme/api")
            return
        try:
            project = validate_scope(candidates[0]) if candidates else None
        except ValidationError as exc:
            await _refuse(send, f"{SCOPE_HEADER}: {exc}")
            return
        forwarded: dict[str, Any] = dict(scope)
        if project is not None:
            rest = [(key, value) for key, value in headers if key.lower() != _HEADER]
            forwarded["headers"] = [*rest, (_HEADER, project.encode("latin-1"))]
        forwarded["path"] = "/mcp"
        forwarded["raw_path"] = b"/mcp"
        await self.app(forwarded, receive, send)
