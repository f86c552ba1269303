"""Opening one SQLite file from several processes at once: the WAL switch waits its turn."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from search.sqlite.store import _use_wal


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
