"""The SQLite store: the embedded shape's database, one file on one machine.

The file holds every memory, its vector and an FTS5 index; searches run on an in-memory copy of the
rows (:mod:`search.sqlite.memory_index`: exact cosine, and BM25 scored as FTS5 scores), kept in step with
the file by a change log, so other processes' writes are seen. WAL, so readers never block the
writer. All writes in a process go through **one** connection guarded by a lock, each unit of work
in ``BEGIN IMMEDIATE``; other processes on the same file wait on SQLite's busy timeout, so several
``hivemem`` processes may share a file on one machine (never over a network filesystem: WAL needs
shared memory). A team server with many writers is what the distributed shape (OpenSearch) is for.

A damaged file is refused, not served: opening runs ``PRAGMA quick_check`` (bounded in time;
``HIVEMEM_SQLITE_INTEGRITY_CHECK=off`` skips it), and any "malformed" error later marks the store
corrupt, so it answers no more writes and reports itself unready until it is repaired.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from hivemem.audit import AuditQuery
from hivemem.coalescer import Coalescer
from hivemem.errors import (
    AuditNotFoundError,
    DuplicateMemoryError,
    EmbeddingMismatchError,
    MemoryNotFoundError,
    StoreCorruptError,
    StoreError,
    StoreUnavailableError,
)
from hivemem.fusion import Candidate
from hivemem.knowledge import KnowledgeChunk
from hivemem.model import (
    AuditEvent,
    DuplicatePolicy,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
)
from hivemem.resolution import Neighbour, Resolution
from hivemem.tokens import TokenRecord
from search.base import PageMark, SearchFilter, missing_end, not_written
from search.capabilities import PlanDecision, ReembedBatch, refuse_stale_vectors
from search.knowledge_delegate import DelegatesKnowledge
from search.neighbours import nearest, neighbour_filter
from search.query_terms import query_terms
from search.sqlite import reembed, second_vectors
from search.sqlite import tokens as token_rows
from search.sqlite.keyword_index import BM25_K1
from search.sqlite.knowledge import KnowledgeTables
from search.sqlite.memory_index import ExactVectors, MemoryIndex
from search.sqlite.rows import (
    ASSIGNMENTS,
    audit_from_row,
    memory_from_row,
    memory_row,
    relation_from_row,
    to_timestamp,
)
from search.sqlite.schema import (
    ADDED_COLUMNS,
    ADDED_INDEXES,
    KNOWLEDGE_SCHEMA,
    MEMORY_COLUMNS,
    MEMORY_COLUMNS_WITHOUT_VECTOR,
    SCHEMA,
    SCHEMA_VERSION,
    TOKEN_SCHEMA,
)
from search.sqlite.sql import fts_query, marks
from search.sqlite.tuning import SQLiteTuning

__all__ = ["SQLiteStore"]

log = logging.getLogger(__name__)


_BUSY_TIMEOUT_S = 30.0
# The vector change log keeps this many entries; a process further behind reloads every vector.
_CHANGES_KEPT = 200_000
_PRUNE_EVERY = 5_000
_IN_CHUNK = 2_000  # values per IN list (rescoring, relations), well under SQLite's limit on variables
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


def _filter_key(where: SearchFilter) -> tuple[object, ...]:
    """A hashable stand-in for ``where``: searches with equal keys can share one batch."""
    return (
        tuple(where.scopes), tuple(where.states), tuple(where.memory_types), tuple(where.tags),
        where.created_after, where.created_before, tuple(where.exclude_ids),
    )  # fmt: skip


class SQLiteStore(DelegatesKnowledge):
    """A :class:`search.base.Store` in one SQLite file (or in memory with ``path=":memory:"``)."""

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
        self._index = MemoryIndex(dimension, tuning)  # loaded by the first search, or by warm()
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
        self._knowledge = KnowledgeTables(self._read, self._write, dimension)
        self._second_looked: dict[str, int | None] = {}  # per model: where the pending look goes on from
        self._vector_searches: Coalescer[tuple[object, int], tuple[Sequence[float], SearchFilter], list[Candidate]] = (
            Coalescer(self._vector_batch)
        )

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
        # The writer takes its own rows into a loaded index now, outside the write lock: left to
        # the next search, a bulk of 5,000 rows held every recall that came in next for ~0.9 s
        # (all of them wait on the one sync). An index not loaded yet (a one-shot CLI) stays so.
        if self._index.loaded:
            self.warm()

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

    # -- writes --------------------------------------------------------------------------------

    def _write_row(self, conn: sqlite3.Connection, memory: Memory, policy: DuplicatePolicy) -> bool:
        refuse_stale_vectors([memory], self._embedding_model)
        values = memory_row(memory, self._dimension)
        exists = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory.id,)).fetchone()
        try:
            if exists is None:
                conn.execute(f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES ({marks(values)})", values)
            elif policy is DuplicatePolicy.FAIL:
                raise DuplicateMemoryError(f"memory {memory.id} already exists")
            elif policy is DuplicatePolicy.SKIP:
                return False
            else:
                # UPDATE keeps the rowid, so the FTS update trigger fires (REPLACE would not).
                conn.execute(f"UPDATE memories SET {ASSIGNMENTS} WHERE id = ?", (*values, memory.id))
        except sqlite3.IntegrityError as exc:
            raise DuplicateMemoryError(
                f"scope {memory.scope!r} already holds a memory with this content (hash {memory.content_hash[:12]})"
            ) from exc
        return True

    def put(self, memory: Memory, policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> bool:
        with self._write() as conn:
            return self._write_row(conn, memory, policy)

    def put_many(self, memories: Sequence[Memory], policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> int:
        if not memories:
            return 0
        written, duplicates = 0, []
        with self._write() as conn:  # one transaction, one commit
            for memory in memories:
                try:
                    written += self._write_row(conn, memory, policy)
                except DuplicateMemoryError:  # its statement failed alone; the unit goes on
                    duplicates.append(memory.id)
        if duplicates:
            raise not_written(duplicates)
        return written

    def write_resolved(self, incoming: Memory, decide: Callable[[Memory | None], Resolution]) -> Resolution:
        # One BEGIN IMMEDIATE unit: the lookup, the decision and the write see no other writer.
        return self.write_resolved_many([incoming], lambda _, held: decide(held))[0]

    def write_resolved_many(
        self, incoming: Sequence[Memory], decide: Callable[[Memory, Memory | None], Resolution]
    ) -> list[Resolution]:
        return self.write_planned(incoming, lambda memory, held, _: decide(memory, held), neighbours=0)

    def write_planned(self, incoming: Sequence[Memory], decide: PlanDecision, *, neighbours: int) -> list[Resolution]:
        # One BEGIN IMMEDIATE transaction for the batch: every other writer, in any process, waits,
        # so the neighbours a decision sees are all there is (one commit, not one per memory).
        with self._write_lock:
            if neighbours and self._in_memory:
                # An in-memory store reads through the writer: synced inside the unit, the index would
                # take in rows a failed unit then rolls back. No other process writes it, and the lock
                # keeps this one's threads out, so syncing first is syncing with all there is.
                self.warm()
            return self._write_planned(incoming, decide, neighbours)

    def _write_planned(self, incoming: Sequence[Memory], decide: PlanDecision, neighbours: int) -> list[Resolution]:
        resolutions = []
        written: dict[str, Memory] = {}  # this batch's writes, which the index cannot see before commit
        with self._write() as conn:
            if neighbours and not self._in_memory:
                # Once, now that every other writer waits: a file store's index syncs through a
                # reader, which sees every commit and none of this unit's rows.
                self.warm()
            for memory in incoming:
                row = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE scope = ? AND content_hash = ?",
                    (memory.scope, memory.content_hash),
                ).fetchone()
                near = self._neighbours(memory, neighbours, written) if neighbours and row is None else []
                resolution = decide(memory, None if row is None else memory_from_row(row), near)
                for changed in resolution.writes:
                    self._write_row(conn, changed, DuplicatePolicy.OVERWRITE)
                    written[changed.id] = changed
                for relation in resolution.relations:
                    self._insert_relation(conn, relation)
                for event in resolution.audit:
                    self._insert_audit(conn, event)
                resolutions.append(resolution)
        return resolutions

    def _neighbours(self, memory: Memory, limit: int, written: dict[str, Memory]) -> list[Neighbour]:
        """The ``limit`` memories of ``memory``'s scope nearest to it, this batch's writes included."""
        if memory.embedding is None:
            return []
        # On this thread, not through the coalescer: this thread holds the writer. The index was
        # synced when the unit began (write_planned).
        anywhere = neighbour_filter(memory.scope)
        # Exact cosines always: they decide reinforce / merge / supersede at fixed thresholds.
        near = self._index.vector_search([memory.embedding], anywhere, limit, self._exact)[0]
        found = {c.id: c.score for c in near}
        held = {m.id: m for m in self.get_many([i for i in found if i not in written])}
        return nearest(memory, found, held, written, limit)

    def delete(self, memory_id: str) -> Memory:
        with self._write() as conn:
            row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"no memory with id {memory_id}")
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            conn.execute("DELETE FROM relations WHERE source_id = ? OR target_id = ?", (memory_id, memory_id))
        return memory_from_row(row)

    def record_access(self, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        placeholders = marks(memory_ids)
        with self._write() as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? "
                f"WHERE id IN ({placeholders})",
                (to_timestamp(at), *memory_ids),
            )

    def add_relation(self, relation: Relation) -> None:
        self.add_relations([relation])

    def add_relations(self, relations: Sequence[Relation]) -> None:
        if not relations:
            return
        ends = sorted({end for r in relations for end in (r.source_id, r.target_id)})
        with self._write() as conn:
            found: set[str] = set()
            for start in range(0, len(ends), _IN_CHUNK):
                chunk = ends[start : start + _IN_CHUNK]
                found.update(
                    row[0] for row in conn.execute(f"SELECT id FROM memories WHERE id IN ({marks(chunk)})", chunk)
                )
            missing_end(relations, found)
            for relation in relations:
                self._insert_relation(conn, relation)

    @staticmethod
    def _insert_relation(conn: sqlite3.Connection, relation: Relation) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO relations(source_id, target_id, type, strength, author, created_at, description) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (relation.source_id, relation.target_id, relation.type.value, relation.strength,
             relation.author, to_timestamp(relation.created_at), relation.description),
        )  # fmt: skip

    def audit(self, event: AuditEvent) -> None:
        self.audit_many([event])

    def audit_many(self, events: Sequence[AuditEvent]) -> None:
        if not events:
            return
        with self._write() as conn:
            for event in events:
                self._insert_audit(conn, event)

    @staticmethod
    def _insert_audit(conn: sqlite3.Connection, event: AuditEvent) -> None:
        conn.execute(
            "INSERT INTO audit(action, memory_id, scope, author, detail, at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                event.action,
                event.memory_id,
                event.scope,
                event.author,
                json.dumps(event.detail),
                to_timestamp(event.at),
            ),
        )

    # -- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        with self._read() as conn:
            row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFoundError(f"no memory with id {memory_id}")
        return memory_from_row(row)

    def get_many(self, memory_ids: Sequence[str], *, vectors: bool = True) -> list[Memory]:
        if not memory_ids:
            return []
        placeholders = marks(memory_ids)
        columns = MEMORY_COLUMNS if vectors else MEMORY_COLUMNS_WITHOUT_VECTOR
        with self._read() as conn:
            rows = conn.execute(f"SELECT {columns} FROM memories WHERE id IN ({placeholders})", tuple(memory_ids))
            by_id = {row["id"]: memory_from_row(row) for row in rows}
        return [by_id[i] for i in memory_ids if i in by_id]

    def find_by_hash(self, scope: str, content_hash: str) -> Memory | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE scope = ? AND content_hash = ?",
                (scope, content_hash),
            ).fetchone()
        return None if row is None else memory_from_row(row)

    def held_contents(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        held: set[tuple[str, str]] = set()
        with self._read() as conn:
            for key in dict.fromkeys(keys):  # each an index lookup (memories_scope_hash)
                if conn.execute("SELECT 1 FROM memories WHERE scope = ? AND content_hash = ?", key).fetchone():
                    held.add(key)
        return held

    def thread_neighbours(self, memory_ids: Sequence[str], window: int) -> dict[str, list[tuple[str, int]]]:
        if not memory_ids or window < 1:
            return {}
        out: dict[str, list[tuple[str, int]]] = {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, scope, thread, created_at FROM memories INDEXED BY memories_thread_members "
                f"WHERE id IN ({marks(memory_ids)}) AND thread != ''",
                tuple(memory_ids),
            ).fetchall()
            for memory_id, scope, thread, created_at in rows:
                # Row values walk the (scope, thread, created_at, id) index from the memory outwards.
                near = []
                for side, order in (("<", "DESC"), (">", "ASC")):
                    found = conn.execute(
                        # "thread != ''" lets the planner use the partial index (a bound thread proves nothing).
                        "SELECT id FROM memories WHERE scope = ? AND thread = ? AND thread != '' "
                        f"AND (created_at, id) {side} (?, ?) ORDER BY created_at {order}, id {order} LIMIT ?",
                        (scope, thread, created_at, memory_id, window),
                    )
                    near += [(row[0], distance) for distance, row in enumerate(found, start=1)]
                out[memory_id] = near
        return out

    def count(self, scopes: Sequence[str] | None = None) -> int:
        with self._read() as conn:
            if scopes is None:
                return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
            placeholders = marks(scopes)
            return int(
                conn.execute(
                    f"SELECT COUNT(*) FROM memories WHERE scope IN ({placeholders})", tuple(scopes)
                ).fetchone()[0]
            )

    def list_memories(
        self,
        where: SearchFilter,
        limit: int,
        *,
        authors: Sequence[str] = (),
        after: PageMark | None = None,
        vectors: bool = True,
    ) -> list[Memory]:
        if limit < 1:
            return []
        clause, params = self._where(where)
        if authors:
            clause += f" AND m.author IN ({marks(authors)})"
            params += list(authors)
        if after is not None:
            stamp = to_timestamp(after.created_at)
            clause += " AND (m.created_at < ? OR (m.created_at = ? AND m.id > ?))"
            params += [stamp, stamp, after.id]
        columns = MEMORY_COLUMNS if vectors else MEMORY_COLUMNS_WITHOUT_VECTOR
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {columns} FROM memories m WHERE {clause} ORDER BY m.created_at DESC, m.id LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [memory_from_row(r) for r in rows]

    def tally(self, scopes: Sequence[str]) -> dict[tuple[MemoryType, MemoryState], int]:
        if not scopes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT memory_type, state, COUNT(*) FROM memories WHERE scope IN ({marks(scopes)}) "
                "GROUP BY memory_type, state",
                tuple(scopes),
            ).fetchall()
        return {(MemoryType(t), MemoryState(s)): int(n) for t, s, n in rows}

    def tally_by_scope(self) -> dict[str, dict[tuple[MemoryType, MemoryState], int]]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT scope, memory_type, state, COUNT(*) FROM memories GROUP BY scope, memory_type, state"
            ).fetchall()
        tallies: dict[str, dict[tuple[MemoryType, MemoryState], int]] = {}
        for scope, memory_type, state, count in rows:
            tallies.setdefault(scope, {})[(MemoryType(memory_type), MemoryState(state))] = int(count)
        return tallies

    def scopes(self) -> list[str]:
        with self._read() as conn:
            return [r[0] for r in conn.execute("SELECT DISTINCT scope FROM memories ORDER BY scope")]

    @staticmethod
    def _where(where: SearchFilter) -> tuple[str, list[Any]]:
        clauses = [f"m.scope IN ({marks(where.scopes)})"]
        params: list[Any] = list(where.scopes)
        clauses.append(f"m.state IN ({marks(where.states)})")
        params += [s.value for s in where.states]
        if where.memory_types:
            clauses.append(f"m.memory_type IN ({marks(where.memory_types)})")
            params += [t.value for t in where.memory_types]
        if where.tags:
            clauses.append(f"EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value IN ({marks(where.tags)}))")
            params += list(where.tags)
        if where.created_after is not None:
            clauses.append("m.created_at >= ?")
            params.append(to_timestamp(where.created_after))
        if where.created_before is not None:
            clauses.append("m.created_at < ?")
            params.append(to_timestamp(where.created_before))
        if where.exclude_ids:
            clauses.append(f"m.id NOT IN ({marks(where.exclude_ids)})")
            params += list(where.exclude_ids)
        return " AND ".join(clauses), params

    def keyword_search(self, text: str, where: SearchFilter, limit: int) -> list[Candidate]:
        terms = query_terms(text)
        if terms is None or limit < 1:
            return []
        self.warm()
        hits = self._index.keyword_search(terms[0], where, limit)
        return self._fts_search(text, where, limit) if hits is None else hits

    def _fts_search(self, text: str, where: SearchFilter, limit: int) -> list[Candidate]:
        """BM25 by FTS5 itself: for queries with a word of several tokens (``foo_bar``), a phrase."""
        query = fts_query(text)
        if query is None:
            return []
        clause, params = self._where(where)
        # bm25() is lower-is-better; negate it here so every leg is higher-is-better.
        sql = (
            "SELECT m.id AS id, -bm25(memories_fts) AS score FROM memories_fts "
            "JOIN memories m ON m.rowid = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {clause} ORDER BY bm25(memories_fts), m.id LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(sql, (query, *params, limit)).fetchall()
        return [Candidate(row["id"], float(row["score"])) for row in rows]

    def vector_search(self, vector: Sequence[float], where: SearchFilter, limit: int) -> list[Candidate]:
        if len(vector) != self._dimension:
            raise EmbeddingMismatchError(
                f"query vector has {len(vector)} dimensions, the store expects {self._dimension}"
            )
        if limit < 1:
            return []
        # Concurrent searches with the same filter are scored together, in one matrix product.
        return self._vector_searches.submit((_filter_key(where), limit), (vector, where))

    def _vector_batch(
        self, key: tuple[object, int], asked: Sequence[tuple[Sequence[float], SearchFilter]]
    ) -> list[list[Candidate]]:
        self.warm()
        return self._index.vector_search([vector for vector, _ in asked], asked[0][1], key[1], self._rescorer())

    def _rescorer(self) -> ExactVectors | None:
        return self._exact if self._tuning.vector_rescore else None

    def _exact(self, rowids: Sequence[int]) -> dict[int, tuple[str, bytes]]:
        """The float32 vectors of the vector leg's candidates, for the index to rescore them exactly."""
        found: dict[int, tuple[str, bytes]] = {}
        with self._read() as conn:
            for start in range(0, len(rowids), _IN_CHUNK):
                chunk = rowids[start : start + _IN_CHUNK]
                sql = f"SELECT rowid, id, embedding FROM memories WHERE rowid IN ({marks(chunk)})"
                found.update((row[0], (row[1], row[2])) for row in conn.execute(sql, chunk))
        return found

    @property
    def bm25_scale(self) -> float:
        # FTS5's bm25() multiplies each term's weight by (k1 + 1); Lucene's BM25 dropped the factor
        # (its IDF differs a little too: ln(1 + x) against ln(x), close once a term is rare).
        return 1.0 + BM25_K1

    def warm(self) -> None:
        """Load every row into the in-memory index now (the first search would); later, apply what
        other connections committed since."""
        with self._read() as conn:
            if self._in_memory:
                self._index.sync(conn)
                return
            # PRAGMA data_version changes when another connection commits, this process's writer
            # included: unchanged, there is nothing new for the index (a read, no lookup of the log).
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if getattr(self._local, "synced_version", None) == version:
                return
            self._index.sync(conn)
            self._local.synced_version = version

    def relations(self, memory_id: str) -> list[Relation]:
        return self.relations_of([memory_id])

    def relations_of(self, memory_ids: Sequence[str]) -> list[Relation]:
        ids = list(dict.fromkeys(memory_ids))
        found: dict[tuple[str, str, str], Relation] = {}
        with self._read() as conn:
            for start in range(0, len(ids), _IN_CHUNK):
                chunk = ids[start : start + _IN_CHUNK]
                where = marks(chunk)
                sql = f"SELECT * FROM relations WHERE source_id IN ({where}) OR target_id IN ({where})"
                for row in conn.execute(sql, [*chunk, *chunk]):
                    relation = relation_from_row(row)
                    found[relation.key] = relation
        return sorted(found.values(), key=Relation.oldest_first)

    def audit_event(self, event_id: str) -> AuditEvent:
        if not event_id.isdigit():
            raise AuditNotFoundError(f"no audit record with id {event_id}")
        with self._read() as conn:
            row = conn.execute("SELECT * FROM audit WHERE seq = ?", (int(event_id),)).fetchone()
        if row is None:
            raise AuditNotFoundError(f"no audit record with id {event_id}")
        return audit_from_row(row)

    def remove_relation(self, relation: Relation) -> bool:
        with self._write() as conn:
            removed = conn.execute(
                "DELETE FROM relations WHERE source_id = ? AND target_id = ? AND type = ?",
                (relation.source_id, relation.target_id, relation.type.value),
            ).rowcount
        return bool(removed)

    def audit_log(self, memory_id: str | None = None) -> list[AuditEvent]:
        sql = "SELECT * FROM audit" + (" WHERE memory_id = ?" if memory_id is not None else "") + " ORDER BY seq"
        with self._read() as conn:
            rows = conn.execute(sql, () if memory_id is None else (memory_id,)).fetchall()
        return [audit_from_row(r) for r in rows]

    def audit_search(self, query: AuditQuery) -> list[AuditEvent]:
        clauses: list[str] = []
        params: list[object] = []
        if query.memory_id is not None:
            clauses.append("memory_id = ?")
            params.append(query.memory_id)
        if query.actions:
            clauses.append(f"action IN ({marks(query.actions)})")
            params.extend(query.actions)
        if query.author is not None:
            clauses.append("author = ?")
            params.append(query.author)
        if query.scopes is not None:
            clauses.append(f"scope IN ({marks(query.scopes)})")
            params.extend(query.scopes)
        if query.since is not None:
            clauses.append("at >= ?")
            params.append(to_timestamp(query.since))
        if query.until is not None:
            clauses.append("at < ?")
            params.append(to_timestamp(query.until))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT * FROM audit{where} ORDER BY seq DESC LIMIT ?"
        with self._read() as conn:
            rows = conn.execute(sql, (*params, query.limit)).fetchall()
        return [audit_from_row(r) for r in rows]

    # -- re-embedding --------------------------------------------------------------------------

    def reembed_remaining(self, model: str) -> int:
        with self._read() as conn:
            return reembed.remaining(conn, model)

    def reembed_pending(self, model: str, limit: int) -> ReembedBatch:
        with self._read() as conn:
            return reembed.pending(conn, model, limit)

    def reembed_stage(
        self,
        model: str,
        dimension: int,
        memories: Sequence[tuple[Memory, Sequence[float]]],
        chunks: Sequence[tuple[KnowledgeChunk, Sequence[float]]],
    ) -> None:
        with self._write() as conn:
            reembed.stage(conn, model, dimension, memories, chunks)

    def reembed_swap(self, model: str, dimension: int) -> bool:
        with self._write() as conn:
            if not reembed.swap(conn, model, dimension):
                return False
            # Still under the write lock: no write sees the old model with the new vectors.
            self._embedding_model = model
            self._dimension = dimension
            self._index = MemoryIndex(dimension, self._tuning)
            self._knowledge = KnowledgeTables(self._read, self._write, dimension)
        return True

    # -- tokens --------------------------------------------------------------------------------

    def second_vectors_pending(self, model: str, limit: int) -> list[Memory]:
        with self._read() as conn:
            found, after = second_vectors.pending(conn, model, limit, self._second_looked.get(model))
        self._second_looked[model] = after
        return found

    def second_vectors_rescan(self, model: str) -> None:
        self._second_looked.pop(model, None)

    def second_vectors_keep_only(self, model: str) -> int:
        with self._write() as conn:
            return second_vectors.keep_only(conn, model)

    def second_vectors_remaining(self, model: str) -> int:
        with self._read() as conn:
            return second_vectors.remaining(conn, model)

    def put_second_vectors(self, model: str, dimension: int, vectors: Sequence[tuple[Memory, Sequence[float]]]) -> None:
        with self._write() as conn:
            second_vectors.put(conn, model, dimension, vectors)

    def second_vector_scores(self, model: str, vector: Sequence[float], memory_ids: Sequence[str]) -> list[Candidate]:
        with self._read() as conn:
            return second_vectors.scores(conn, model, vector, memory_ids)

    def put_token(self, record: TokenRecord) -> None:
        with self._write() as conn:
            token_rows.insert_token(conn, record)

    def get_token(self, token_id: str) -> TokenRecord | None:
        with self._read() as conn:
            return token_rows.read_token(conn, token_id)

    def tokens(self) -> list[TokenRecord]:
        with self._read() as conn:
            return token_rows.all_tokens(conn)

    def revoke_token(self, token_id: str, at: datetime) -> TokenRecord:
        with self._write() as conn:
            return token_rows.revoke_token(conn, token_id, at)

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
