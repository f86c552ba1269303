"""One sleep pass at a time among the processes that share an embedded store.

In the embedded shape every process that serves opens the store and runs a sleep timer:
``hivemem serve``, and one ``hivemem mcp`` per agent session (an editor with three sessions open
runs three). Each looks up when a scope last slept before sleeping it, but two that look while the
other's pass is still running both sleep it: one cluster consolidated twice into two insights, each
archiving done and audited twice. The distributed shape serialises its passes with a Redis lock
(``workers.tasks``); here the lock is a file in the data folder, held with ``flock``, which the
kernel releases when the block ends or its process dies, so a crashed pass never holds it. Two
threads of one process exclude each other too: each opens the file on its own.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["sleep_lock"]

LOCK_NAME = "sleep.lock"


@contextmanager
def sleep_lock(data_dir: Path, *, wait: bool) -> Iterator[bool]:
    """Whether the block holds the lock of the store in ``data_dir``: with ``wait``, always, once
    another pass has ended; without, only if no pass runs now (False: another process is sleeping
    the store, so this one has nothing to do)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / LOCK_NAME).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
