"""Whether a process of this host still runs, by its id: what a record left by a process that may
have ended (a job's runner, a node's pid file) is judged by."""

from __future__ import annotations

import os

__all__ = ["process_alive"]


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (one of another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
