"""Scopes: which project a memory belongs to, derived from where an agent works.

A scope is a path-like string: ``github.com/acme/api`` for a git checkout with a remote,
``local/<parent>/<dir>`` otherwise, and ``""`` for global memories that every project recalls.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from hivemem.errors import ValidationError
from hivemem.model import GLOBAL_SCOPE

__all__ = [
    "MAX_SCOPE_LENGTH",
    "SCOPE_HEADER",
    "SCOPE_PATTERN",
    "SCOPE_RULE",
    "derive_scope",
    "recall_scopes",
    "scope_from_remote",
    "validate_scope",
    "work_tree",
]

MAX_SCOPE_LENGTH = 200
SCOPE_HEADER = "X-Hivemem-Scope"
"""The HTTP header in which a client names its scope (REST: a default; MCP: the session's lock)."""
_SEGMENT = r"(?!\.\.(?:/|$))[A-Za-z0-9._~@:+\-]+"
SCOPE_PATTERN = rf"^(?:{_SEGMENT}(?:/{_SEGMENT})*)?$(?!\n)"
"""A scope, global (``""``) included, as a pattern that means the same in Python and in JSON Schema:
``$(?!\n)`` ends it at the true end of the text (Python's ``$`` alone admits a trailing newline)."""
_SCOPE = re.compile(SCOPE_PATTERN)
SCOPE_RULE = (
    f"scope must be up to {MAX_SCOPE_LENGTH} characters of path segments "
    "(letters, digits, . _ ~ @ : + -) separated by '/', with no '..' segment"
)
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")


def validate_scope(scope: str) -> str:
    """Return ``scope`` if it is well formed (or global), else raise :class:`ValidationError`."""
    if scope == GLOBAL_SCOPE:
        return scope
    if len(scope) > MAX_SCOPE_LENGTH or not _SCOPE.fullmatch(scope):
        raise ValidationError(SCOPE_RULE, field="scope")
    return scope


def recall_scopes(scope: str) -> list[str]:
    """The scopes a recall in ``scope`` reads: the scope itself plus global."""
    return [GLOBAL_SCOPE] if scope == GLOBAL_SCOPE else [scope, GLOBAL_SCOPE]


def _clean(segment: str) -> str:
    return re.sub(r"[^A-Za-z0-9._~@:+\-]", "-", segment).strip("-.") or "_"


def scope_from_remote(url: str) -> str | None:
    """``host/org/repo`` from a git remote URL (https, ssh, or scp-like ``git@host:org/repo.git``)."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    else:
        match = _SCP_LIKE.match(url)
        if match is None:
            return None
        host, path = match.group("host"), match.group("path")
    path = path.strip("/")
    path = path.removesuffix(".git")
    segments = [_clean(s) for s in path.split("/") if s]
    if not host or not segments:
        return None
    return "/".join([_clean(host.lower()), *segments])


def work_tree(start: Path) -> Path | None:
    """The root of the git work tree ``start`` lies in: the nearest folder, ``start`` or above it,
    whose ``.git`` is a folder, or a worktree's or submodule's file naming its git folder."""
    found = _checkout(start)
    return None if found is None else found[0]


def _checkout(start: Path) -> tuple[Path, Path] | None:
    """The root of the work tree ``start`` lies in and its git folder."""
    for folder in (start, *start.parents):
        git_dir = _git_dir_at(folder)
        if git_dir is not None:
            return folder, git_dir
    return None


def _git_dir_at(folder: Path) -> Path | None:
    candidate = folder / ".git"
    if candidate.is_dir():
        return candidate
    if candidate.is_file():
        # A worktree or submodule: ".git" holds "gitdir: <path>".
        text = candidate.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = (folder / text.removeprefix("gitdir:").strip()).resolve()
            common = target / "commondir"
            if common.is_file():
                return (target / common.read_text(encoding="utf-8").strip()).resolve()
            return target
    return None


def _remote_url(config_text: str) -> str | None:
    """The url of remote "origin", else of the first remote, from a git config file's text."""
    remotes: dict[str, str] = {}
    section: str | None = None
    for raw in config_text.splitlines():
        line = raw.strip()
        header = re.match(r'^\[remote\s+"(?P<name>[^"]+)"\]$', line)
        if header:
            section = header.group("name")
        elif line.startswith("["):
            section = None
        elif section is not None and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "url":
                remotes.setdefault(section, value.strip())
    return remotes.get("origin") or next(iter(remotes.values()), None)


def derive_scope(cwd: Path) -> str:
    """The scope of a working directory: its git remote as ``host/org/repo``, else ``local/<parent>/<dir>``."""
    cwd = cwd.resolve()
    found = _checkout(cwd)
    git_dir = None if found is None else found[1]
    if git_dir is not None and (git_dir / "config").is_file():
        url = _remote_url((git_dir / "config").read_text(encoding="utf-8", errors="replace"))
        scope = scope_from_remote(url) if url else None
        if scope:
            return scope[:MAX_SCOPE_LENGTH]
    parent = _clean(cwd.parent.name) if cwd.parent != cwd else "_"
    return f"local/{parent}/{_clean(cwd.name or 'root')}"
