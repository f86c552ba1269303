"""``hivemem setup``: register hivemem with an MCP client in one command, and get it ready.

``setup claude-code`` writes the project's ``.mcp.json``, ``setup cursor`` its ``.cursor/mcp.json``,
``setup claude-desktop`` the desktop app's config file, ``setup print`` prints the entry. Each
keeps the file's other servers, refuses a file that is not a JSON object (changing nothing), and
writes atomically. Over stdio the entry runs ``hivemem mcp``, which takes its scope from the
project folder the client starts it in (``--scope`` fixes one); with ``--url`` it points the client
at a running server's ``/mcp``, with the project's scope in the ``X-Hivemem-Scope`` header (``--scope``,
else the scope of the project folder: its git remote, as stdio would derive it), since a server
over HTTP cannot see the client's folder and refuses every write of a connection with no project.
``--token`` adds the bearer header a team server needs, as a reference to ``$HIVEMEM_TOKEN`` that
the client expands (``${HIVEMEM_TOKEN}``; Cursor's ``${env:HIVEMEM_TOKEN}``): the token itself is
never written into a file the team commits. Those files name ``hivemem`` as found on PATH, never
this machine's installation.

For Claude Code it also installs the hooks (``.claude/settings.json``: a briefing at session start,
relevant memories with each prompt, a reminder to save a handoff) and the memory rules (a marked
section of ``CLAUDE.md``); for Cursor the rules file. ``--no-hooks`` and ``--no-rules`` leave them
out (:mod:`api.cli.project_files`). The hooks call a running server: ``--url``, else the local
``hivemem serve``. Then the data folder is made and the model loaded once, so the first session
does not wait for it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from api.cli.opened import opened_service
from api.cli.project_files import (
    install_claude_hooks,
    read_config,
    write_cursor_rules,
    write_if_changed,
    write_rules_section,
)
from api.remote import configured_server
from hivemem.config import Settings
from hivemem.errors import ValidationError
from hivemem.scope import SCOPE_HEADER, derive_scope, validate_scope

__all__ = ["CLIENTS", "COMMANDS", "add_parser", "client_entry", "config_path", "run", "write_entry"]

COMMANDS = ("setup",)

CLIENTS = ("claude-code", "cursor", "claude-desktop", "print")
SERVER_NAME = "hivemem"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``setup`` to the ``hivemem`` subcommands."""
    setup = sub.add_parser("setup", help="register hivemem with an MCP client and load the model once")
    setup.add_argument("client", choices=CLIENTS, help="where to register it ('print': show the entry only)")
    setup.add_argument(
        "--project", type=Path, default=None, help="the project folder (claude-code, cursor; default: here)"
    )
    setup.add_argument(
        "--scope",
        default=None,
        help="the project's scope (default: over stdio, the folder the client starts in; "
        "with --url, the project folder's)",
    )
    setup.add_argument("--url", default=None, help="a running server's base URL, to use over HTTP instead of stdio")
    setup.add_argument("--token", default=None, help="the bearer token for --url (a team server's)")
    setup.add_argument("--no-warm", action="store_true", help="do not load the model now")
    setup.add_argument(
        "--no-hooks", action="store_true", help="claude-code: do not install the session, prompt and stop hooks"
    )
    setup.add_argument(
        "--no-rules",
        action="store_true",
        help="do not add the memory rules (CLAUDE.md for claude-code, .cursor/rules/hivemem.mdc for cursor)",
    )


def _command(*, committed: bool = False) -> list[str]:
    """How the client starts hivemem (the stdio server, the hooks).

    In a file a team commits (``committed``: .mcp.json, .cursor/mcp.json, .claude/settings.json)
    it is ``hivemem`` as found on PATH, since a teammate's installation lives elsewhere. Otherwise,
    or when none is on PATH, the ``hivemem`` of the installation running this (absolute, since a
    client does not start it in this shell), else this Python running the CLI module."""
    found = shutil.which("hivemem")
    if committed and found is not None:
        return ["hivemem"]
    beside = Path(sys.executable).with_name("hivemem")
    if beside.is_file():
        return [str(beside)]
    if found is not None:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "api.cli"]


def _machine_path_warning(command: list[str]) -> str | None:
    """What to tell the user when a committed file had to name this machine's installation."""
    if command == ["hivemem"]:
        return None
    return (
        f"hivemem is not on PATH, so the files name this machine's {command[0]}: a teammate's client "
        "will not find it there. Put hivemem on PATH (pipx install, or the virtual environment's bin "
        "folder) and run setup again before committing them."
    )


# How each client reads an environment variable in its config file: the token stays out of a
# file the team commits, and each teammate's own reaches the client from their environment.
TOKEN_VARIABLE = "HIVEMEM_TOKEN"
_TOKEN_REFERENCE = {"cursor": "${env:HIVEMEM_TOKEN}"}  # Claude Code (and the rest) expand ${VAR}


def client_entry(client: str, *, scope: str | None, url: str | None, token: str | None) -> dict[str, Any]:
    """The ``mcpServers`` entry for ``client``."""
    if url is None:
        if token is not None:
            raise ValidationError("--token goes with --url (stdio needs no token)", field="token")
        command, *args = _command(committed=client in ("claude-code", "cursor"))
        return {"command": command, "args": [*args, "mcp", *([] if scope is None else ["--scope", scope])]}
    if client == "claude-desktop":
        raise ValidationError("Claude Desktop starts its servers over stdio: leave out --url", field="url")
    if not url.startswith(("http://", "https://")):
        raise ValidationError("--url: give the server's base URL, e.g. http://127.0.0.1:8765", field="url")
    entry: dict[str, Any] = {"url": url.rstrip("/") + "/mcp"}
    if client in ("claude-code", "print"):
        entry = {"type": "http", **entry}
    # Every client that takes a URL here takes headers too (the /mcp/SCOPE form is for those that don't).
    headers = {} if scope is None else {SCOPE_HEADER: scope}
    if token is not None:
        headers["Authorization"] = f"Bearer {_TOKEN_REFERENCE.get(client, '${' + TOKEN_VARIABLE + '}')}"
    if headers:
        entry["headers"] = headers
    return entry


def config_path(client: str, project: Path | None) -> Path:
    """The file ``client`` reads its MCP servers from. Raises ``ValidationError`` for a project
    folder that does not exist: a mistyped ``--project`` is not made into a folder."""
    folder = (project or Path.cwd()).expanduser()
    if client in ("claude-code", "cursor") and not folder.is_dir():
        raise ValidationError(f"{folder} is no folder: give the project's folder with --project", field="project")
    if client == "claude-code":
        return folder / ".mcp.json"
    if client == "cursor":
        return folder / ".cursor" / "mcp.json"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "Claude" / "claude_desktop_config.json"


def write_entry(path: Path, entry: dict[str, Any]) -> bool:
    """Set ``mcpServers.hivemem`` in the JSON file at ``path``, keeping everything else; True when
    the file changed. Raises ``ValidationError`` (the file untouched) for a folder there or a file
    that is not a JSON object."""
    config = read_config(path, "mcpServers")
    config.setdefault("mcpServers", {})[SERVER_NAME] = entry
    return write_if_changed(path, json.dumps(config, indent=2) + "\n")


def _hooks_url(args: argparse.Namespace, settings: Settings) -> str:
    """The server the hooks call: ``--url``, else the configured server, else the local ``hivemem serve``."""
    if args.url is not None:
        return str(args.url).rstrip("/")
    return configured_server(settings.server_url, settings.port)


def _said(path: Path, changed: bool, what: str) -> None:
    print(f"{what} in {path}" if changed else f"{path}: {what} there already")


def _project_files(args: argparse.Namespace, settings: Settings, scope: str | None, project: Path | None) -> None:
    """The hooks and the rules of the client, in the project folder (``project``: Claude Code's)."""
    if args.client == "cursor" and not args.no_rules:
        folder = (args.project or Path.cwd()).expanduser()
        path = folder / ".cursor" / "rules" / "hivemem.mdc"
        _said(path, write_cursor_rules(path), "memory rules")
    if project is None:
        return
    if not args.no_hooks:
        url = _hooks_url(args, settings)
        options = ["--url", url, *([] if scope is None else ["--scope", scope])]
        path = project / ".claude" / "settings.json"
        _said(
            path,
            install_claude_hooks(path, _command(committed=True), options),
            f"hooks (session start, prompt, stop) calling {url}",
        )
        print(
            f"the hooks call the server at {url}: keep `hivemem serve` running there "
            "(the MCP entry needs none over stdio)"
        )
    if not args.no_rules:
        path = project / "CLAUDE.md"
        _said(path, write_rules_section(path), "memory rules")


def run(args: argparse.Namespace, settings: Settings) -> int:
    scope = args.scope
    if scope is not None:
        validate_scope(scope)
    elif args.url is not None and args.client != "claude-desktop":
        # Over HTTP the server cannot see where the client runs: name the project's scope here.
        folder = (args.project or Path.cwd()).expanduser()
        if folder.is_dir():
            scope = derive_scope(folder)
    entry = client_entry(args.client, scope=scope, url=args.url, token=args.token)
    if args.client == "print":
        print(json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2))
    else:
        path = config_path(args.client, args.project)
        changed = write_entry(path, entry)
        where = "" if args.url is None or scope is None else f", scope {scope}"
        print(f"registered hivemem in {path}{where}" if changed else f"{path}: hivemem is registered already{where}")
        _project_files(args, settings, scope, path.parent if args.client == "claude-code" else None)
        warning = _machine_path_warning(_command(committed=True)) if args.client in ("claude-code", "cursor") else None
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    if args.token is not None:
        print(
            f"the token is not written into {'the entry' if args.client == 'print' else 'the file'}: it reads "
            f"${TOKEN_VARIABLE}, so run `export {TOKEN_VARIABLE}=…` (your token) where the client starts",
            file=sys.stderr,
        )
    if args.url is None and not args.no_warm:
        settings.data_dir.expanduser().mkdir(parents=True, exist_ok=True)
        with opened_service(settings, load_model=True) as service:
            service.parts.warm_up()
        print(f"data folder {settings.data_dir}, model {service.embedder.model_id}: ready", file=sys.stderr)
    return 0
