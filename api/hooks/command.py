"""``hivemem hook EVENT``: read the client's JSON on stdin, ask the running server, answer on stdout.

Whatever goes wrong (no server, a timeout, a refused token, bad JSON on stdin), the hook exits 0
with nothing on stdout and one line in its log (:func:`api.hooks.session_log.hooks_log`): a hook
must never block the agent it serves. This module is imported before anything else of hivemem, so
it imports little: the standard library, the REST client and the scope rules.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from api.hooks.events import EVENTS, MIN_SIMILARITY, HookContext
from api.hooks.session_log import log_line
from api.remote import Remote, configured_server
from hivemem.scope import derive_scope, validate_scope

__all__ = ["add_arguments", "main", "probe"]

_STDIN_MAX_BYTES = 1024 * 1024  # a client's event is a few KB; a prompt is bounded by the client
_HTTP_TIMEOUT_S = 3.0  # under every client's hook budget, so the hook answers before it is killed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``hivemem hook`` (shared by its fast path and the full CLI's help)."""
    parser.add_argument("event", choices=sorted(EVENTS), help="the client event this call answers")
    parser.add_argument(
        "--url", default=None, help="the server's base URL (default: HIVEMEM_SERVER_URL, else the local hivemem serve)"
    )
    parser.add_argument(
        "--scope", default=None, help="the project's scope (default: the scope of the folder the client works in)"
    )
    parser.add_argument(
        "--min-similarity",
        type=float,
        default=MIN_SIMILARITY,
        help=f"prompt-submit: inject only memories this close to the prompt (cosine; default {MIN_SIMILARITY})",
    )


def _server_url(given: str | None) -> str:
    if given:
        return given.rstrip("/")
    from hivemem.config import Settings  # only without --url: `hivemem setup` always writes one

    settings = Settings()
    return configured_server(settings.server_url, settings.port)


def _project(payload: Mapping[str, Any]) -> Path | None:
    for candidate in (os.environ.get("CLAUDE_PROJECT_DIR"), payload.get("cwd")):
        if isinstance(candidate, str) and candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def _token(project: Path | None) -> str:
    """HIVEMEM_TOKEN, else the bearer token of the project's MCP entry (``hivemem setup --token``)."""
    token = os.environ.get("HIVEMEM_TOKEN", "")
    if token or project is None:
        return token
    try:
        entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["hivemem"]
        header = str(entry.get("headers", {}).get("Authorization", ""))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""
    return header.removeprefix("Bearer ").strip()


def _scope(given: str | None, project: Path | None) -> str | None:
    if given is not None:
        return validate_scope(given)
    return None if project is None else derive_scope(project)


def _payload() -> dict[str, Any]:
    raw = sys.stdin.buffer.read(_STDIN_MAX_BYTES + 1)
    if len(raw) > _STDIN_MAX_BYTES:
        raise ValueError(f"the client's JSON is over {_STDIN_MAX_BYTES} bytes")
    payload = json.loads(raw or b"{}")
    if not isinstance(payload, dict):
        raise ValueError("the client's JSON is not an object")
    return payload


def probe(command: str, project: Path) -> str:
    """Call the server a hook ``command`` (as installed) would call, as it would call it from
    ``project``; what it answered, or raise ``RemoteError`` (``hivemem doctor``)."""
    words = shlex.split(command)
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    args, _ = parser.parse_known_args(words[words.index("hook") + 1 :])
    url = _server_url(args.url)
    scope = _scope(args.scope, project)
    Remote(url, token=_token(project), scope=scope, timeout_s=_HTTP_TIMEOUT_S).briefing(scope)
    return url


def main(argv: Sequence[str]) -> int:
    """Run one hook; always 0 (a parse error of the command line itself exits 2, as argparse does)."""
    parser = argparse.ArgumentParser(prog="hivemem hook", description="answer one client event (JSON on stdin)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        payload = _payload()
        project = _project(payload)
        scope = _scope(args.scope, project)
        remote = Remote(_server_url(args.url), token=_token(project), scope=scope, timeout_s=_HTTP_TIMEOUT_S)
        answer = EVENTS[args.event](HookContext(payload, remote, scope, args.min_similarity))
    except Exception as exc:  # never block the client: log it, answer nothing
        log_line(args.event, f"{type(exc).__name__}: {exc}")
        return 0
    if answer is not None:
        sys.stdout.write(json.dumps(answer) + "\n")
    return 0
