"""The SQLite store's file and connections: opening, checking and migrating the file, one writer
connection under a lock with each unit of work in ``BEGIN IMMEDIATE``, a reader connection per
thread, and the typed errors of a busy, closed or damaged file.

WAL, so readers never block the writer. Other processes on the same file wait on SQLite's busy
timeout, so several ``hivemem`` processes may share a file on one machine (never over a network
filesystem: WAL needs shared memory).

A damaged file is refused, not served: opening runs ``PRAGMA quick_check`` (bounded in time;
``HIVEMEM_SQLITE_INTEGRITY_CHECK=off`` skips it), and any "malformed" error later marks the store
corrupt, so it answers no more writes and reports itself unready until it is repaired.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path

from hivemem.errors import EmbeddingMismatchError, StoreCorruptError, StoreError, StoreUnavailableError
from search.sqlite import reembed, second_vectors
from search.sqlite.schema import ADDED_COLUMNS, ADDED_INDEXES, KNOWLEDGE_SCHEMA, SCHEMA, SCHEMA_VERSION, TOKEN_SCHEMA
from search.sqlite.tuning import SQLiteTuning

__all__ = ["SQLiteDatabase"]

log = logging.getLogger(__name__)

_BUSY_TIMEOUT_S = 30.0
# The vector change log keeps this many entries; a process further behind reloads every vector.
_CHANGES_KEPT = 200_000
_PRUNE_EVERY = 5_000
# SQLite's codes for a damaged file, as opposed to a busy or missing one.
_CORRUPT_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
# VM instructions between two looks at the integrity check's deadline.
_CHECK_PROGRESS_STEPS = 10_000


def _use_wal(conn: sqlite3.Connection) -> None:
    """Put the database in WAL mode, waiting for another process that is doing the same.

    Switching a fresh file's journal mode needs its exclusive lock, and SQLite answers "database is
    locked" at once instead of calling the busy handler: two processes opening one new database
    together had one of them fail to start.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _is_corruption(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    return name.startswith(_CORRUPT_CODES) or "malformed" in text or "not a database" in text


def _recovery_hint(path: str) -> str:
    return (
        f"stop every hivemem process using it, keep a copy of {path}, then recover what is readable into a new "
        f"file: `sqlite3 {path} .recover | sqlite3 {path}.recovered` and point HIVEMEM_STORE_URL at it (or "
        "move it in place)"
    )


@contextmanager
def _while_made(file: Path) -> Iterator[None]:
    """Hold the store's creation lock (a ``-create.lock`` file beside it) while a database that is
    not there yet, or is empty, is looked at and made. SQLite creates the file empty when it
    connects and writes it when the schema is made: without the lock, a second process opening a
    new store at that moment saw 0 bytes and refused it as truncated. With it, the second waits
    for the first to finish, then finds the schema. A file that holds data takes no lock."""
    if file.is_file() and file.stat().st_size > 0:
        yield
        return
    try:
        import fcntl
    except ImportError:  # no advisory locks here (Windows): the window stays, as it was
        yield
        return
    with open(f"{file}-create.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _refuse_empty_file(file: Path) -> None:
    """Refuse a database file of 0 bytes: SQLite would take it as a new, empty database, and serve a
    store that was truncated (a full disk, a bad copy) as if it had never held a memory."""
    wal = Path(f"{file}-wal")
    if file.is_file() and file.stat().st_size == 0 and not (wal.is_file() and wal.stat().st_size > 0):
        raise StoreCorruptError(
            f"{file} is empty (0 bytes), not a hivemem store: a database truncated by a full disk or a failed "
            "copy looks like this. Restore it from a backup or an export; to start a new store instead, delete "
            "the empty file"
        )


class SQLiteDatabase:
    """One SQLite file (or an in-memory database with ``path=":memory:"``) holding hivemem's schema
    for one embedding model; the rows' own code is the store's (:class:`search.sqlite.SQLiteStore`)."""

    def __init__(
        self,
        path: str,
        *,
        embedding_model: str,
        dimension: int,
        integrity_check: bool = True,
        tuning: SQLiteTuning | None = None,
    ) -> None:
        self._path = path
        self._in_memory = path == ":memory:"
        # True when no database was there and this store made it: a server says so at start, so a
        # store moved or deleted away is not silently served as an empty one.
        self.created_now = self._in_memory
        if not self._in_memory:
            file = Path(path)
            if file.is_dir():
                raise StoreUnavailableError(f"{path} is a directory; the SQLite store needs a file path")
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # the folder is a file, or may not be made
                reason = "it is a file" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
                raise StoreUnavailableError(
                    f"cannot make the folder of the SQLite store {path}: {reason}; "
                    "set HIVEMEM_DATA_DIR (or HIVEMEM_STORE_URL) to a writable folder"
                ) from exc
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._closed = False
        self._corruption: str | None = None
        self._writes_since_prune = 0
        tuning = tuning or SQLiteTuning()
        with nullcontext() if self._in_memory else _while_made(Path(path)):
            if not self._in_memory:
                _refuse_empty_file(Path(path))
                self.created_now = not Path(path).exists()
            self._writer = self._connect()
            if integrity_check and not self._in_memory:
                self._check_integrity(tuning.sqlite_integrity_check_timeout_s)
            self._init_schema(embedding_model, dimension)
        self._embedding_model = embedding_model
        self._dimension = dimension
        self._tuning = tuning

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            if not self._in_memory:
                _use_wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(_BUSY_TIMEOUT_S * 1000)}")
            return conn
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailableError(f"cannot open SQLite database {self._path}: {exc}") from exc

    def _reader(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreUnavailableError("the store is closed")
        if self._in_memory:
            # An in-memory database lives in one connection; reads share it under the lock.
            return self._writer
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            with self._write_lock:
                if self._closed:  # closed while connecting: this one would never be closed
                    conn.close()
                    raise StoreUnavailableError("the store is closed")
                self._readers.append(conn)
            self._local.conn = conn
        return conn

    def _failure(self, what: str, exc: sqlite3.Error) -> StoreUnavailableError:
        """The typed error for a driver error; a damaged file marks the whole store corrupt."""
        if _is_corruption(exc):
            self._corruption = f"{self._path} is damaged ({exc})"
            return StoreCorruptError(f"{self._corruption}: {_recovery_hint(self._path)}")
        return StoreUnavailableError(f"SQLite {what} failed: {exc}")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        try:
            if self._in_memory:
                with self._write_lock:
                    yield self._writer
            else:
                yield self._reader()
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise self._failure("read", exc) from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One unit of work on the single writer connection, in BEGIN IMMEDIATE."""
        if self._closed:
            raise StoreUnavailableError("the store is closed")
        if self._corruption is not None:
            raise StoreCorruptError(f"writes are refused: {self._corruption}; {_recovery_hint(self._path)}")
        with self._write_lock:
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreUnavailableError(f"database {self._path} is locked by another writer: {exc}") from exc
            except sqlite3.DatabaseError as exc:
                raise self._failure("write", exc) from exc
            try:
                yield conn
                self._prune_changes(conn)
            except BaseException as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.IntegrityError):
                    raise self._failure("write", exc) from exc
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.DatabaseError as exc:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise self._failure("commit", exc) from exc
        self._committed()

    def _committed(self) -> None:
        """Called after each unit of work commits, outside the write lock."""

    def _prune_changes(self, conn: sqlite3.Connection) -> None:
        """Every few thousand units of work, drop vector-log entries far behind its head."""
        self._writes_since_prune += 1
        if self._writes_since_prune < _PRUNE_EVERY:
            return
        conn.execute(
            "DELETE FROM vector_changes WHERE seq <= (SELECT MAX(seq) FROM vector_changes) - ?", (_CHANGES_KEPT,)
        )

    def _check_integrity(self, timeout_s: float) -> None:
        """``PRAGMA quick_check`` at open; a damaged file is refused. A check that runs past
        ``timeout_s`` (a very large file) is abandoned and the store opens, with the damage, if
        any, caught by the first statement that meets it."""
        deadline = time.monotonic() + timeout_s
        self._writer.set_progress_handler(lambda: int(time.monotonic() > deadline), _CHECK_PROGRESS_STEPS)
        try:
            rows = [row[0] for row in self._writer.execute("PRAGMA quick_check(5)").fetchall()]
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc).lower():
                log.warning("integrity check of %s stopped after %.0f s, opening unchecked", self._path, timeout_s)
                return
            self._writer.close()
            raise self._failure("integrity check", exc) from exc
        except sqlite3.DatabaseError as exc:
            self._writer.close()
            raise self._failure("integrity check", exc) from exc
        finally:
            with suppress(sqlite3.Error):
                self._writer.set_progress_handler(None, 0)
        if rows != ["ok"]:
            self._writer.close()
            raise StoreCorruptError(
                f"{self._path} is damaged (integrity check: {'; '.join(map(str, rows))}): {_recovery_hint(self._path)}"
            )

    def check(self) -> None:
        if self._closed:
            raise StoreUnavailableError("the store is closed")
        if self._corruption is not None:
            raise StoreCorruptError(f"{self._corruption}: {_recovery_hint(self._path)}")
        with self._read() as conn:
            conn.execute("SELECT COUNT(*) FROM memories WHERE scope = ''").fetchone()

    def _check_schema_version(self) -> None:
        has_meta = self._writer.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        if has_meta is None:
            return
        row = self._writer.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and row[0] != SCHEMA_VERSION:
            raise StoreUnavailableError(
                f"{self._path} has schema version {row[0]}, this hivemem reads version {SCHEMA_VERSION}: "
                "open it with the hivemem release that wrote it, or start a new database"
            )

    def _add_missing_columns(self) -> None:
        """Columns newer than a database's tables, added in place (each with a default, so rows
        written before read as they did)."""
        for table, column, ddl in ADDED_COLUMNS:
            present = {r[1] for r in self._writer.execute(f"PRAGMA table_info({table})")}
            if column in present:
                continue
            try:
                self._writer.execute(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):  # another process added it first
                    raise

    def _init_schema(self, embedding_model: str, dimension: int) -> None:
        try:
            with self._write_lock:
                self._check_schema_version()
                # executescript commits on its own, so it runs outside a unit of work; every
                # statement is IF NOT EXISTS, so racing processes converge on one schema.
                self._writer.executescript(
                    SCHEMA
                    + KNOWLEDGE_SCHEMA
                    + TOKEN_SCHEMA
                    + reembed.REEMBED_SCHEMA
                    + second_vectors.SECOND_VECTORS_SCHEMA
                )
                self._add_missing_columns()
                for ddl in ADDED_INDEXES:
                    self._writer.execute(ddl)
            with self._write() as conn:
                rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                if not rows:
                    conn.executemany(
                        "INSERT INTO meta(key, value) VALUES (?, ?)",
                        [
                            ("schema_version", SCHEMA_VERSION),
                            ("embedding_model", embedding_model),
                            ("dimension", str(dimension)),
                        ],
                    )
                elif rows.get("embedding_model") != embedding_model or rows.get("dimension") != str(dimension):
                    raise EmbeddingMismatchError(
                        f"{self._path} was built with embedding model {rows.get('embedding_model')!r} "
                        f"({rows.get('dimension')} dims), but {embedding_model!r} ({dimension} dims) is "
                        "configured; set HIVEMEM_EMBED_MODEL back or use a new database"
                    )
        except sqlite3.DatabaseError as exc:
            self._writer.close()
            if _is_corruption(exc):
                raise StoreCorruptError(
                    f"{self._path} is not a usable SQLite database ({exc}): {_recovery_hint(self._path)}"
                ) from exc
            raise StoreUnavailableError(f"{self._path} is not a usable SQLite database: {exc}") from exc
        except StoreError:
            self._writer.close()
            raise

    # -- properties ----------------------------------------------------------------------------

    @property
    def embedding_model(self) -> str:
        return self._embedding_model

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def path(self) -> str:
        """The database file (``:memory:`` for an in-memory store)."""
        return self._path

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._write_lock:
            for conn in [*self._readers, self._writer]:
                with suppress(sqlite3.Error):
                    conn.close()
            self._readers.clear()

    def drop(self) -> None:
        self.close()
        if not self._in_memory:
            for suffix in ("", "-wal", "-shm"):
                Path(self._path + suffix).unlink(missing_ok=True)
