"""Opening one SQLite file from several processes at once: the WAL switch waits its turn."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hivemem.errors import StoreCorruptError
from search.sqlite.database import _use_wal
from search.sqlite.store import SQLiteStore


class LockedAtFirst:
    """A connection whose first journal-mode switches fail as SQLite's do while another process
    is switching the same fresh file (that race cannot be produced on demand)."""

    def __init__(self, conn: sqlite3.Connection, failures: int, message: str = "database is locked") -> None:
        self.conn = conn
        self.failures = failures
        self.message = message
        self.attempts = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise sqlite3.OperationalError(self.message)
        return self.conn.execute(sql, *args)


def test_the_wal_switch_is_tried_again_while_the_file_is_locked(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "fresh.db", isolation_level=None)
    try:
        locked = LockedAtFirst(conn, failures=3)
        _use_wal(locked)  # type: ignore[arg-type]
        assert locked.attempts == 4
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_other_errors_of_the_wal_switch_are_not_retried(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "fresh.db", isolation_level=None)
    try:
        broken = LockedAtFirst(conn, failures=5, message="disk I/O error")
        with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
            _use_wal(broken)  # type: ignore[arg-type]
        assert broken.attempts == 1
    finally:
        conn.close()


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="waiting lock requests are listed in Linux's /proc/locks")
def test_a_store_being_made_by_another_process_is_waited_for_not_refused(tmp_path: Path) -> None:
    # What a second process saw while the first was making a new store: the file there, 0 bytes.
    import fcntl

    db = tmp_path / "hive.db"
    opened: list[object] = []
    with open(f"{db}-create.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # "the other process", making the store
        db.touch()
        opener = threading.Thread(target=lambda: opened.append(_open(db)))
        opener.start()
        inode = os.stat(f"{db}-create.lock").st_ino
        deadline = time.monotonic() + 300  # a backstop: the condition is the opener waiting, or done
        while not opened and not _waited_on(inode):
            assert time.monotonic() < deadline, "the opener neither waited nor finished"
            time.sleep(0.005)
        db.unlink()  # it gave up before writing anything; the waiting opener makes the store itself
        fcntl.flock(lock, fcntl.LOCK_UN)
    opener.join()
    [store] = opened
    assert isinstance(store, SQLiteStore) and store.created_now
    store.close()
    db.write_bytes(b"")  # a truncated store, with no one making it: still refused
    refused = _open(db)
    assert isinstance(refused, StoreCorruptError) and "is empty" in str(refused)


def _waited_on(inode: int) -> bool:
    """Whether a lock request on the file of ``inode`` is blocked (Linux lists waiters with "->")."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and any(f.endswith(f":{inode}") for f in fields):
            return True
    return False


def _open(db: Path) -> SQLiteStore | Exception:
    try:
        return SQLiteStore(str(db), embedding_model="hash-8", dimension=8)
    except Exception as exc:  # returned, so the test sees a refusal as a value
        return exc
