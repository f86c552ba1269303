"""A model folder derived from a packaged file (e5's packed file, mpnet's zip parts), built once.

The folder carries a marker holding the stamp of what it was built from; it is rebuilt when the
stamp changes. It is written in a staging folder and renamed into place, so a process that dies
half-way leaves no broken model, and builds are serialised by a lock file beside it, so two
processes starting at once (a server and its workers) build it once, and the second uses it.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["MARKER", "built_folder", "folder_lock"]

MARKER = "hivemem-source.txt"


def _current(folder: Path, stamp: str) -> bool:
    marker = folder / MARKER
    return marker.is_file() and marker.read_text() == stamp


def built_folder(folder: Path, stamp: str, write: Callable[[Path], None]) -> Path:
    """``folder``, written by ``write`` (into an empty folder it is given) unless its marker already
    says ``stamp``. Whatever ``write`` raises propagates, and nothing of that build is left."""
    if _current(folder, stamp):
        return folder
    with folder_lock(folder):
        if _current(folder, stamp):
            return folder  # another process built it while this one waited
        staging = folder.parent / f".{folder.name}.partial"
        if staging.exists():
            shutil.rmtree(staging)  # what a build that died half-way left (its lock is free, so it is dead)
        staging.mkdir()
        try:
            write(staging)
            (staging / MARKER).write_text(stamp)
            if folder.exists():
                shutil.rmtree(folder)  # built from files that have changed since
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Held by one process (and one thread) at a time: whoever builds ``folder`` or adds a file to it.

    The lock file lies beside the folder; the lock is released when the block ends, or when the
    process dies."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
