"""The SQLite store: the embedded shape's database, one file on one machine.

The file holds every memory, its vector and an FTS5 index; searches run on an in-memory copy of the
rows (:mod:`search.sqlite.memory_index`: exact cosine, and BM25 scored as FTS5 scores), kept in step with
the file by a change log, so other processes' writes are seen. The file, its connections and their
errors are :mod:`search.sqlite.database`'s; relations, audit and tokens are
:mod:`search.sqlite.records`'; knowledge is :mod:`search.sqlite.knowledge`'s. A team server with many
writers is what the distributed shape (OpenSearch) is for.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from hivemem.coalescer import Coalescer
from hivemem.errors import DuplicateMemoryError, EmbeddingMismatchError, MemoryNotFoundError
from hivemem.fusion import Candidate
from hivemem.knowledge import KnowledgeChunk
from hivemem.model import DuplicatePolicy, Memory, MemoryState, MemoryType
from hivemem.resolution import Neighbour, Resolution
from search.base import PageMark, SearchFilter, not_written
from search.capabilities import PlanDecision, ReembedBatch, refuse_stale_vectors
from search.knowledge_delegate import DelegatesKnowledge
from search.neighbours import nearest, neighbour_filter
from search.query_terms import query_terms
from search.sqlite import reembed, second_vectors
from search.sqlite.keyword_index import BM25_K1
from search.sqlite.knowledge import KnowledgeTables
from search.sqlite.memory_index import ExactVectors, MemoryIndex
from search.sqlite.records import SQLiteRecords
from search.sqlite.rows import ASSIGNMENTS, memory_from_row, memory_row, to_timestamp
from search.sqlite.schema import MEMORY_COLUMNS, MEMORY_COLUMNS_WITHOUT_VECTOR
from search.sqlite.sql import IN_CHUNK, fts_query, marks
from search.sqlite.tuning import SQLiteTuning

__all__ = ["SQLiteStore"]


def _filter_key(where: SearchFilter) -> tuple[object, ...]:
    """A hashable stand-in for ``where``: searches with equal keys can share one batch."""
    return (
        tuple(where.scopes), tuple(where.states), tuple(where.memory_types), tuple(where.tags),
        where.created_after, where.created_before, tuple(where.exclude_ids),
    )  # fmt: skip


class SQLiteStore(DelegatesKnowledge, SQLiteRecords):
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
        tuning = tuning or SQLiteTuning()
        # Before the file is opened: opening commits the schema, and a commit consults the index.
        self._index = MemoryIndex(dimension, tuning)  # loaded by the first search, or by warm()
        super().__init__(
            path, embedding_model=embedding_model, dimension=dimension, integrity_check=integrity_check, tuning=tuning
        )
        self._knowledge = KnowledgeTables(self._read, self._write, dimension)
        self._second_looked: dict[str, int | None] = {}  # per model: where the pending look goes on from
        self._vector_searches: Coalescer[tuple[object, int], tuple[Sequence[float], SearchFilter], list[Candidate]] = (
            Coalescer(self._vector_batch)
        )

    def _committed(self) -> None:
        # The writer takes its own rows into a loaded index now, outside the write lock: left to
        # the next search, a bulk of 5,000 rows held every recall that came in next for ~0.9 s
        # (all of them wait on the one sync). An index not loaded yet (a one-shot CLI) stays so.
        if self._index.loaded:
            self.warm()

    # -- writes --------------------------------------------------------------------------------

    def _write_row(self, conn: sqlite3.Connection, memory: Memory, policy: DuplicatePolicy) -> bool:
        refuse_stale_vectors([memory], self._embedding_model)
        values = memory_row(memory, self._dimension)
        exists = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory.id,)).fetchone()
        try:
            if exists is None and policy is DuplicatePolicy.UPDATE:
                return False  # forgotten since it was read: the edit must not bring it back
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
            for start in range(0, len(rowids), IN_CHUNK):
                chunk = rowids[start : start + IN_CHUNK]
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

    # -- the second model's vectors ----------------------------------------------------------

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
