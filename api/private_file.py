"""Secrets kept in the data folder (the token key, this machine's token): readable by their owner only.

Each is written whole to a staging file made with mode 0600 (never a file that was readable by
others for a moment), then put in place in one step, so a reader sees the old text or the new one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["keep_first_private", "replace_private"]


def replace_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, replacing what was there."""
    os.replace(_staged(path, text), path)


def keep_first_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it exists: of processes racing here, the first one wins and
    the others keep its text (the file is linked into place, never overwritten)."""
    staging = _staged(path, text)
    try:
        os.link(staging, path)
    except FileExistsError:
        pass
    finally:
        staging.unlink()


def _staged(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)
    return staging
