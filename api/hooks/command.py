"""``hivemem hook EVENT``: read the client's JSON on stdin, ask the running server, answer on stdout.

Whatever goes wrong (no server, a timeout, a refused token, bad JSON on stdin), the hook exits 0
with nothing on stdout and one line in its log (:func:`api.hooks.session_log.hooks_log`): a hook
must never block the agent it serves. So it has a deadline of its own for everything it does
(``DEADLINE_S``, under the shortest timeout ``hivemem setup`` gives a client's hook), reads at most
``_ANSWER_MAX_BYTES`` of the server's answer, and prints at most ``PRINT_MAX_CHARS``. This module is
imported before anything else of hivemem, so it imports little: the standard library, the REST
client and the scope rules.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from api.hooks.events import EVENTS, MIN_SIMILARITY, HookContext
from api.hooks.session_log import log_line
from api.remote import Remote, configured_server
from hivemem.scope import derive_scope, validate_scope

__all__ = ["DEADLINE_S", "PRINT_MAX_CHARS", "add_arguments", "main", "probe"]

_STDIN_MAX_BYTES = 1024 * 1024  # a client's event is a few KB; a prompt is bounded by the client
_HTTP_TIMEOUT_S = 3.0  # one wait on the socket
DEADLINE_S = 4.0
"""The whole hook, stdin to stdout: under the 5 s that ``hivemem setup`` gives the shortest hook
(api/cli/project_files.py), so the hook answers, or says nothing, before the client kills it."""
_ANSWER_MAX_BYTES = 1024 * 1024  # a briefing is about 1,500 tokens; a recall of 3 memories less
PRINT_MAX_CHARS = 32_000
"""The most a hook puts into the agent's context: about 8,000 tokens, beyond any briefing."""


class _OutOfTime(Exception):
    """The hook's deadline passed (raised by its timer, wherever the hook was)."""


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
        default=None,
        help="prompt-submit: inject only memories this close to the prompt (cosine; default: the server's model's "
        f"floor, {MIN_SIMILARITY} for all-MiniLM-L6-v2)",
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


def _token(project: Path | None, url: str) -> str:
    """HIVEMEM_TOKEN, else the bearer token of the project's MCP entry (``hivemem setup --token``),
    else this machine's own token for a server on this machine (:mod:`api.local_token`)."""
    token = os.environ.get("HIVEMEM_TOKEN", "") or (_entry_token(project) if project is not None else "")
    if token:
        return token
    # Imported here, as the settings are: a hook given a token (or --url and a token) pays for neither.
    from api.local_token import client_token
    from hivemem.config import Settings

    return client_token(Settings(), url)


def _entry_token(project: Path) -> str:
    try:
        entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["hivemem"]
        header = str(entry.get("headers", {}).get("Authorization", ""))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""
    return _expanded(header.removeprefix("Bearer ").strip())


_REFERENCE = re.compile(r"^\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}$")


def _expanded(value: str) -> str:
    """A header value as the client sends it: ``${NAME}`` or Cursor's ``${env:NAME}`` read from
    the environment (``hivemem setup --token`` writes the reference, never the token)."""
    match = _REFERENCE.match(value)
    return os.environ.get(match.group(1), "") if match else value


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
    Remote(url, token=_token(project, url), scope=scope, timeout_s=_HTTP_TIMEOUT_S).briefing(scope)
    return url


def main(argv: Sequence[str]) -> int:
    """Run one hook; always 0 (a parse error of the command line itself exits 2, as argparse does)."""
    parser = argparse.ArgumentParser(prog="hivemem hook", description="answer one client event (JSON on stdin)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    deadline = time.monotonic() + DEADLINE_S
    try:
        with _timer(DEADLINE_S):
            payload = _payload()
            project = _project(payload)
            scope = _scope(args.scope, project)
            if scope is None:
                # No project and no --scope (an empty event): a briefing would be the global
                # scope's, which the session did not ask for. Say nothing.
                log_line(args.event, "no project folder in the event and no --scope: nothing to do")
                return 0
            url = _server_url(args.url)
            remote = Remote(
                url,
                token=_token(project, url),
                scope=scope,
                timeout_s=_HTTP_TIMEOUT_S,
                deadline=deadline,
                max_answer_bytes=_ANSWER_MAX_BYTES,
            )
            answer = EVENTS[args.event](HookContext(payload, remote, scope, args.min_similarity))
    except Exception as exc:  # never block the client: log it, answer nothing
        log_line(args.event, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        return 0
    if answer is not None:
        printed = _within_print_cap(answer)
        if printed is None:
            log_line(args.event, f"an answer over {PRINT_MAX_CHARS} characters was not printed")
        else:
            sys.stdout.write(printed + "\n")
    return 0


class _timer:
    """Raises ``_OutOfTime`` in the hook after ``seconds``, wherever it waits (stdin, a DNS lookup,
    a connect): the socket's timeouts bound each wait, this the sum. Without SIGALRM (Windows) the
    Remote's deadline alone bounds the calls."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = hasattr(signal, "setitimer")

    def __enter__(self) -> None:
        if self.armed:
            signal.signal(signal.SIGALRM, self._ring)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *_: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _ring(self, *_: object) -> None:
        raise _OutOfTime(f"out of its {self.seconds:g} s")


def _within_print_cap(answer: dict[str, Any]) -> str | None:
    """``answer`` as the line printed, its context cut to ``PRINT_MAX_CHARS`` where it is longer;
    None when even that is too long (an answer of another shape)."""
    printed = json.dumps(answer)
    if len(printed) <= PRINT_MAX_CHARS:
        return printed
    output = answer.get("hookSpecificOutput")
    if isinstance(output, dict) and isinstance(output.get("additionalContext"), str):
        room = PRINT_MAX_CHARS - (len(printed) - len(json.dumps(output["additionalContext"]))) - 40
        text = output["additionalContext"][: max(0, room)]
        while len(json.dumps(text)) > room > 0:  # escapes take more than a character each
            text = text[: len(text) * 3 // 4]
        cut = {**answer, "hookSpecificOutput": {**output, "additionalContext": text + "\n… (cut by hivemem)"}}
        printed = json.dumps(cut)
        return printed if len(printed) <= PRINT_MAX_CHARS else None
    return None
