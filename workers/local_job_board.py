"""The embedded shape's job board: one SQLite file in the data folder, shared by every hivemem
process of this machine that uses it.

Without a broker, jobs run in the process that accepted them: `hivemem serve`, a `hivemem mcp` an
agent's client started over stdio, a CLI call. Kept in that process alone, a stdio server's job
ids answered ``job_not_found`` on the server, and the dashboard's Jobs page listed none of an
agent's writes. Here they are the same rows for all of them (WAL, so readers never wait on a
writer; other processes wait on SQLite's busy timeout), with the contract of
:class:`workers.job_board.JobBoard`.

A job is recorded with the process that runs it. A job that is not final, whose process on this
host is gone (a stdio server closed by its client mid-ingest, a CLI interrupted), reads as failed,
saying so, instead of running for ever. Job records are work history, not memory: they are
written without waiting for the disk (``synchronous=OFF``): a power cut may lose the last ones,
never a memory.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hivemem.errors import JobNotFoundError, StoreUnavailableError
from hivemem.jobs import DeadLetter, Job, JobKind, JobState
from hivemem.model import utcnow
from workers.job_board import ItemOutcome, JobItem, job_result
from workers.process_alive import process_alive

__all__ = ["JOB_BOARD_FILE", "LocalJobBoard"]

# The board's file, in the data folder.
JOB_BOARD_FILE = "jobs.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL, total INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0, error TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    owner TEXT NOT NULL, scopes TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_update ON jobs (updated_at);
CREATE INDEX IF NOT EXISTS jobs_by_creation ON jobs (created_at);
CREATE TABLE IF NOT EXISTS job_items (
    job_id TEXT NOT NULL, item_id TEXT NOT NULL, outcome TEXT NOT NULL, PRIMARY KEY (job_id, item_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dead_letters (
    task TEXT NOT NULL, job_ids TEXT NOT NULL, error TEXT NOT NULL, attempts INTEGER NOT NULL, failed_at REAL NOT NULL
);
"""
_BUSY_TIMEOUT_S = 30.0
# Expired jobs are swept at one create in this many: a sweep reads the update index, a create does not.
_SWEEP_EVERY = 64
_COLUMNS = "id, kind, state, total, done, error, created_at, updated_at, owner, scopes, host, pid"


class LocalJobBoard:
    """Jobs and dead letters in the SQLite file at ``path``; thread-safe, and shared by processes."""

    def __init__(self, path: Path, ttl_s: int = 7 * 24 * 3600, max_jobs: int = 10_000) -> None:
        """Open (or make) the board at ``path``. Raises ``StoreUnavailableError`` when it cannot."""
        self._ttl_s, self._max_jobs = ttl_s, max_jobs
        self._host, self._pid = socket.gethostname(), os.getpid()
        self._lock = threading.Lock()
        self._creates = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout={int(_BUSY_TIMEOUT_S * 1000)}")
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=OFF")
            self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailableError(f"cannot open the job board {path}: {exc}") from exc

    @contextmanager
    def _unit(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``: no upgrade from a read lock)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreUnavailableError(f"the job board failed: {exc}") from exc

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreUnavailableError(f"the job board failed: {exc}") from exc

    def create(self, job: Job, items: Sequence[JobItem] = ()) -> None:
        # Jobs here run in the process that made them: nothing is queued that could be lost.
        row = (
            job.id, job.kind.value, job.state.value, job.total, job.done, job.error, job.created_at.timestamp(),
            job.updated_at.timestamp(), job.owner, json.dumps(list(job.scopes)), self._host, self._pid,
        )  # fmt: skip
        with self._unit() as conn:
            conn.execute(f"INSERT OR REPLACE INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 12)})", row)
            self._creates += 1
            if self._creates % _SWEEP_EVERY == 1:
                self._sweep(conn)

    def _sweep(self, conn: sqlite3.Connection) -> None:
        """Forget the jobs past their time to live, and the oldest beyond the cap, with their items."""
        cutoff = utcnow().timestamp() - self._ttl_s
        conn.execute("DELETE FROM jobs WHERE updated_at <= ?", (cutoff,))
        conn.execute(
            "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs ORDER BY updated_at DESC LIMIT -1 OFFSET ?)",
            (self._max_jobs,),
        )
        conn.execute("DELETE FROM job_items WHERE job_id NOT IN (SELECT id FROM jobs)")
        conn.execute("DELETE FROM dead_letters WHERE failed_at <= ?", (cutoff,))

    def recorded(self, job_id: str, incoming_ids: Sequence[str]) -> set[str]:
        held = {row[0] for row in self._rows("SELECT item_id FROM job_items WHERE job_id = ?", (job_id,))}
        return {incoming for incoming in incoming_ids if incoming in held}

    def get(self, job_id: str) -> Job:
        rows = self._rows(f"SELECT {_COLUMNS} FROM jobs WHERE id = ? AND updated_at > ?", (job_id, self._cutoff()))
        if not rows:
            raise JobNotFoundError(
                f"no job {job_id!r} (unknown, or expired); the jobs of hivemem processes on another data folder, "
                "or of a CLI call, are not known here"
            )
        job = self._job_of(rows[0])
        if job.state is JobState.DONE:
            items = self._rows("SELECT outcome FROM job_items WHERE job_id = ?", (job_id,))
            job = replace(job, result=job_result([json.loads(row[0]) for row in items]))
        return job

    def start(self, job_id: str) -> None:
        with self._unit() as conn:
            conn.execute(
                "UPDATE jobs SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                (JobState.RUNNING.value, utcnow().timestamp(), job_id, JobState.QUEUED.value),
            )

    def record(self, job_id: str, outcomes: dict[str, ItemOutcome]) -> None:
        with self._unit() as conn:
            found = conn.execute("SELECT state, total FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if found is None:
                return
            conn.executemany(
                "INSERT OR REPLACE INTO job_items (job_id, item_id, outcome) VALUES (?, ?, ?)",
                [(job_id, incoming, json.dumps(outcome)) for incoming, outcome in outcomes.items()],
            )
            (done,) = conn.execute("SELECT count(*) FROM job_items WHERE job_id = ?", (job_id,)).fetchone()
            state = JobState(found[0])
            if not state.final:
                state = JobState.DONE if done >= int(found[1]) else JobState.RUNNING
            conn.execute(
                "UPDATE jobs SET done = ?, state = ?, updated_at = ? WHERE id = ?",
                (done, state.value, utcnow().timestamp(), job_id),
            )

    def fail(self, job_id: str, error: str) -> None:
        with self._unit() as conn:
            conn.execute(
                "UPDATE jobs SET state = ?, error = ?, updated_at = ? WHERE id = ? AND state != ?",
                (JobState.FAILED.value, error or "failed", utcnow().timestamp(), job_id, JobState.DONE.value),
            )

    def add_dead_letter(self, letter: DeadLetter) -> None:
        with self._unit() as conn:
            conn.execute(
                "INSERT INTO dead_letters (task, job_ids, error, attempts, failed_at) VALUES (?, ?, ?, ?, ?)",
                (
                    letter.task,
                    json.dumps(list(letter.job_ids)),
                    letter.error,
                    letter.attempts,
                    letter.failed_at.timestamp(),
                ),
            )

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        rows = self._rows(
            "SELECT task, job_ids, error, attempts, failed_at FROM dead_letters WHERE failed_at > ? "
            "ORDER BY rowid DESC LIMIT ?",
            (self._cutoff(), limit),
        )
        return [
            DeadLetter(task=task, job_ids=tuple(json.loads(ids)), error=error, attempts=attempts, failed_at=_at(at))
            for task, ids, error, attempts, at in rows
        ]

    def recent(self, limit: int = 100, state: JobState | None = None) -> list[Job]:
        # Filtering by state reads every kept job: a job whose process ended reads as failed, which
        # its row does not say. Without a filter, just the newest ``limit``.
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM jobs WHERE updated_at > ? ORDER BY created_at DESC LIMIT ?",
            (self._cutoff(), -1 if state is not None else limit),
        )
        jobs = (self._job_of(row) for row in rows)
        return [job for job in jobs if state is None or job.state is state][:limit]

    def ping(self) -> bool:
        try:
            self._rows("SELECT 1")
        except StoreUnavailableError:
            return False
        return True

    def close(self) -> None:
        """Close the file (a later call fails)."""
        with self._lock:
            self._conn.close()

    def _cutoff(self) -> float:
        return utcnow().timestamp() - self._ttl_s

    def _job_of(self, row: tuple[Any, ...]) -> Job:
        """A job from its row; one not final whose process on this host is gone has failed."""
        job_id, kind, state, total, done, error, created, updated, owner, scopes, host, pid = row
        job = Job(
            id=job_id, kind=JobKind(kind), state=JobState(state), total=total, done=done, error=error,
            created_at=_at(created), updated_at=_at(updated), owner=owner, scopes=tuple(json.loads(scopes)),
        )  # fmt: skip
        if not job.state.final and host == self._host and not process_alive(pid):
            why = f"the hivemem process that ran it (pid {pid}) ended before it finished; what it wrote is in the store"
            job = replace(job, state=JobState.FAILED, error=why)
        return job


def _at(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)
