"""The SQLite store's search legs, in memory: every row's vector, filter fields and terms, by scope.

Why this design (measured on 2 cores, 384-d all-MiniLM vectors, SciFact sentences, one scope):

- Listing the scope's rows in SQL before scoring them cost 0.55 s per query at 100k memories, far
  more than the scoring. So no query reads rows: each row's filter fields (scope, state, type, tags,
  creation time) live beside its vector and its terms, and a filter is a few vectorised comparisons.
- One partition per scope (:mod:`search.sqlite.index_partition`): a recall reads the scopes it asks for and
  nothing else, so 100 scopes of 10k cost a query what one scope of 10k costs.
- Vectors (:mod:`search.sqlite.vector_set`): float16 codes in faiss, scanned whole in a small scope
  and split into clusters in a large one, the filter applied inside either as a bitmap. Scores are
  the codes' cosines, within ~1e-3 of float32: LoCoMo and SciFact rank exactly as with float32.
  Asked to (the store's ``rescore``, and always for write-time resolution, whose thresholds are
  exact), the candidates are scored again from the float32 vectors in the file: one indexed read
  of about 125 rows a query, cheap in a small store, but at 1M memories those rows are mostly out
  of the page cache and the read cost more than the search (p50 6 ms, and a p95 twice that).
- Before that, an exact float32 matrix per scope: 1.5 GB at 1M rows and ~90 ms a query there.
  Measured and rejected: an IVF index in numpy (spherical k-means, sqrt(n) centroids, a query
  reading its nearest clusters) on 100k SciFact sentences with near-copies kept recall@10 at 0.947,
  0.977 and 0.984 when reading 10, 20 and 30 % of the rows, and was no faster than the exact product.
- Keywords: BM25 from postings in memory, scored as FTS5 scores (:mod:`search.sqlite.keyword_index`),
  because FTS5's own ranking took 73 ms p50 at 100k.
- Processes sharing one file see each other's writes through ``vector_changes``, a log that triggers
  append to on every insert, delete and update of an indexed column. Before a search the index reads
  the log's head (one indexed lookup) and applies the rows changed since it last looked; a log pruned
  past that point, or the first search, loads everything.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from hivemem.fusion import Candidate
from hivemem.read_write_lock import ReadWriteLock
from search.base import SearchFilter
from search.sqlite.index_partition import (
    STATE_CODES,
    TYPE_CODES,
    UNKNOWN_CODE,
    Partition,
    RowFields,
    VectorHit,
    ranked,
)
from search.sqlite.keyword_index import Tokenizer, bm25_idf
from search.sqlite.tuning import SQLiteTuning
from search.sqlite.vector_set import training_rows

__all__ = ["ExactVectors", "MemoryIndex"]

_INITIAL_ROWS = 1024
_LOAD_CHUNK = 2_000
_LENGTH_BATCH = 4_000_000  # postings summed into row lengths at once while loading
_ROW_SQL = "SELECT rowid, id, scope, state, memory_type, tags, created_at, embedding, title, content FROM memories"
_LOAD_SQL = "SELECT rowid, id, scope, state, memory_type, tags, created_at, embedding FROM memories"

F32 = npt.NDArray[np.float32]

ExactVectors = Callable[[Sequence[int]], Mapping[int, tuple[str, bytes]]]
"""Reads rows' float32 vectors from the file: rowid -> (memory id, embedding blob), for the rows
that are still there."""


def _one_blas_thread() -> None:
    """BLAS single-threaded in this process: OpenBLAS's threads spin after each call and took the
    cores from the model's threads, which doubled a recall's latency at 100k memories."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


def _unit(vector: F32) -> F32:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _summed(pairs: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]], size: int) -> npt.NDArray[np.int64]:
    """Term counts summed by rowid, over many terms' (rowids, counts) at once."""
    if not pairs:
        return np.zeros(size, dtype=np.int64)
    rowids = np.concatenate([r for r, _ in pairs])
    counts = np.concatenate([c for _, c in pairs])
    return np.bincount(rowids, weights=counts, minlength=size).astype(np.int64)


def _vector(blob: object) -> F32 | None:
    return _unit(np.frombuffer(blob, dtype=np.float32)) if isinstance(blob, bytes) else None


class MemoryIndex:
    """The rows of one SQLite store, kept in step with the file by its change log. Thread-safe:
    searches run together, applying changes runs alone."""

    def __init__(self, dimension: int, clusters: SQLiteTuning | None = None) -> None:
        _one_blas_thread()
        self._dimension = dimension
        self._clusters = clusters or SQLiteTuning()
        self._partitions: dict[str, Partition] = {}
        # Where each row lives, by rowid: a partition number and a slot (-1: not indexed), and the
        # row's generation, which its postings must carry to count. Arrays, not a dict of tuples,
        # which cost ~150 bytes a row (150 MB at 1M rows).
        self._scope_names: list[str] = []
        self._scope_number: dict[str, int] = {}
        self._part_of = np.full(_INITIAL_ROWS, -1, dtype=np.int32)
        self._slot_of = np.zeros(_INITIAL_ROWS, dtype=np.int32)
        self._generation = np.zeros(_INITIAL_ROWS, dtype=np.uint32)
        self._tag_sets: dict[str, frozenset[str]] = {}  # one object per distinct tag list
        # Rows containing each term (BM25's document frequency), counted from the postings when first
        # asked; kept exact by counting inserted rows in, and dropped when a row loses terms.
        self._containing: dict[str, int] = {}
        self._tokenizer = Tokenizer()
        self._lock = ReadWriteLock()  # searches share it; applying changes takes it alone
        self._applied = 0
        self._loaded = False

    def __len__(self) -> int:
        return sum(p.size for p in self._partitions.values())

    # -- where rows live ------------------------------------------------------------------------

    def _ensure_rowid(self, rowid: int) -> None:
        if rowid < len(self._part_of):
            return
        capacity = max(rowid + 1, len(self._part_of) * 2)
        grow = capacity - len(self._part_of)
        self._part_of = np.concatenate([self._part_of, np.full(grow, -1, np.int32)])
        self._slot_of = np.concatenate([self._slot_of, np.zeros(grow, np.int32)])
        self._generation = np.concatenate([self._generation, np.zeros(grow, np.uint32)])

    def _where(self, rowid: int) -> tuple[str, int] | None:
        if rowid >= len(self._part_of) or self._part_of[rowid] < 0:
            return None
        return self._scope_names[int(self._part_of[rowid])], int(self._slot_of[rowid])

    def _number(self, scope: str) -> int:
        number = self._scope_number.get(scope)
        if number is None:
            number = self._scope_number[scope] = len(self._scope_names)
            self._scope_names.append(scope)
        return number

    def _partition(self, scope: str, capacity: int = 0) -> Partition:
        partition = self._partitions.get(scope)
        if partition is None:
            partition = self._partitions[scope] = Partition(self._dimension, self._clusters, capacity)
        return partition

    def _fields(
        self, memory_id: str, state: str, memory_type: str, tags: str, created_at: str, length: int
    ) -> RowFields:
        tag_set = self._tag_sets.get(tags)
        if tag_set is None:
            tag_set = self._tag_sets[tags] = frozenset(json.loads(tags))
        return RowFields(
            memory_id,
            STATE_CODES.get(state, UNKNOWN_CODE),
            TYPE_CODES.get(memory_type, UNKNOWN_CODE),
            _epoch(created_at),
            tag_set,
            length,
        )

    def _put(self, rowid: int, scope: str, fields: RowFields, vector: F32 | None) -> int:
        """Place a row (a new generation of it when it was indexed before); its slot."""
        self._ensure_rowid(rowid)
        where = self._where(rowid)
        if where is not None and where[0] != scope:
            self._remove(rowid)
            where = None
        partition = self._partition(scope)
        slot = partition.put(None if where is None else where[1], rowid, fields, vector)
        self._part_of[rowid], self._slot_of[rowid] = self._number(scope), slot
        self._generation[rowid] += 1
        if where is not None:
            partition.postings.stale = True  # the row's postings so far are of its older generation
            partition.compact_if_stale(self._generation)
        return slot

    def _remove(self, rowid: int) -> None:
        where = self._where(rowid)
        if where is None:
            return
        scope, slot = where
        partition = self._partitions[scope]
        self._part_of[rowid] = -1
        self._generation[rowid] += 1
        partition.postings.stale = True
        moved = partition.remove(slot)
        if moved is not None:
            self._slot_of[moved] = slot
        if partition.size == 0:
            del self._partitions[scope]
        else:
            partition.compact_if_stale(self._generation)

    # -- keeping in step with the file ---------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the rows were read in once (later syncs apply only what changed)."""
        return self._loaded

    def sync(self, conn: sqlite3.Connection) -> None:
        """Apply every change logged since the last sync (all rows on the first)."""
        # Two queries: SQLite answers MAX(seq) or MIN(seq) from the index, but both at once by a scan.
        head = conn.execute("SELECT MAX(seq) FROM vector_changes").fetchone()[0]
        oldest = conn.execute("SELECT MIN(seq) FROM vector_changes").fetchone()[0]
        if self._loaded and (head is None or head == self._applied):
            return  # read without the lock: _applied only grows, so a stale value costs one more look
        with self._lock.writing():
            if self._loaded and (head is None or head == self._applied):
                return
            if not self._loaded or (oldest is not None and oldest > self._applied + 1):
                self._reload(conn, head or 0)
                return
            changed = [
                r[0] for r in conn.execute("SELECT DISTINCT row FROM vector_changes WHERE seq > ?", (self._applied,))
            ]
            for start in range(0, len(changed), _LOAD_CHUNK):
                chunk = changed[start : start + _LOAD_CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = conn.execute(f"{_ROW_SQL} WHERE rowid IN ({marks})", chunk).fetchall()
                present = {row[0] for row in rows}
                for rowid in chunk:
                    if rowid not in present and self._where(rowid) is not None:
                        self._containing.clear()
                        self._remove(rowid)
                for rowid, memory_id, scope, state, memory_type, tags, created_at, blob, title, content in rows:
                    terms = self._tokenizer.row_terms(title, content, tags)
                    fields = self._fields(memory_id, state, memory_type, tags, created_at, sum(terms.values()))
                    if self._where(rowid) is None:
                        for term in terms.keys() & self._containing.keys():
                            self._containing[term] += 1
                    else:
                        self._containing.clear()  # a rewrite: which terms it lost is not known here
                    self._put(rowid, scope, fields, _vector(blob))
                    self._partitions[scope].postings.add(rowid, int(self._generation[rowid]), terms)
            self._applied = head

    def _reload(self, conn: sqlite3.Connection, head: int) -> None:
        # The head is read before the rows: anything committed in between is applied again, harmlessly.
        self._partitions.clear()
        self._containing.clear()
        self._part_of[:] = -1
        # Partitions sized up front (growing row by row copies every array), and a large scope's
        # clusters trained before its rows arrive, on a uniform sample of its vectors.
        for scope, count in conn.execute("SELECT scope, COUNT(*) FROM memories GROUP BY scope").fetchall():
            partition = self._partition(scope, int(count))
            if count >= self._clusters.vector_cluster_min_rows:
                partition.vectors.start_clustered(self._sample(conn, scope), int(count))
        cursor = conn.execute(_LOAD_SQL)
        while rows := cursor.fetchmany(_LOAD_CHUNK):
            # Rows first, then each scope's vectors in one add (a clustered add assigns thousands at once).
            added: dict[str, tuple[list[int], list[F32]]] = {}
            for rowid, memory_id, scope, state, memory_type, tags, created_at, blob in rows:
                fields = self._fields(memory_id, state, memory_type, tags, created_at, 0)
                slot = self._put(rowid, scope, fields, None)
                vector = _vector(blob)
                if vector is not None:
                    slots, vectors = added.setdefault(scope, ([], []))
                    slots.append(slot)
                    vectors.append(vector)
            for scope, (slots, vectors) in added.items():
                self._partitions[scope].put_vectors(np.asarray(slots, dtype=np.int64), np.stack(vectors))
        self._load_terms(conn)
        self._applied = head
        self._loaded = True

    def _sample(self, conn: sqlite3.Connection, scope: str) -> F32:
        """A uniform sample of the scope's vectors, as many as its clusters train on."""
        rowids = np.fromiter(
            (
                r[0]
                for r in conn.execute("SELECT rowid FROM memories WHERE scope = ? AND embedding IS NOT NULL", (scope,))
            ),
            dtype=np.int64,
        )
        chosen = np.random.default_rng(len(rowids)).choice(rowids, training_rows(len(rowids)), replace=False)
        vectors = []
        for start in range(0, len(chosen), _LOAD_CHUNK):
            chunk = chosen[start : start + _LOAD_CHUNK].tolist()
            marks = ", ".join("?" * len(chunk))
            for (blob,) in conn.execute(f"SELECT embedding FROM memories WHERE rowid IN ({marks})", chunk):
                vector = _vector(blob)
                if vector is not None:
                    vectors.append(vector)
        return np.stack(vectors) if vectors else np.zeros((0, self._dimension), dtype=np.float32)

    def _load_terms(self, conn: sqlite3.Connection) -> None:
        """Postings and row lengths of every row, as the store's FTS5 index has them."""
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_terms USING fts5vocab(main, 'memories_fts', 'instance')"
        )
        # One row per term, its rows and counts as text lists: at 1M memories a row per (term, row)
        # pair was 22M Python tuples, most of the load's time.
        cursor = conn.execute(
            "SELECT term, group_concat(doc), group_concat(n) FROM "
            "(SELECT term, doc, COUNT(*) AS n FROM temp.memories_terms GROUP BY term, doc) GROUP BY term"
        )
        lengths = np.zeros(len(self._part_of), dtype=np.int64)
        pending: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
        waiting = 0
        for term, docs, counts in cursor:
            rowids = np.array(docs.split(","), dtype=np.int64)
            tfs = np.array(counts.split(","), dtype=np.int64)
            known = rowids < len(self._part_of)
            rowids, tfs = rowids[known], tfs[known]
            parts = self._part_of[rowids]
            pending.append((rowids, tfs))
            waiting += len(rowids)
            if waiting > _LENGTH_BATCH:
                lengths += _summed(pending, len(lengths))
                pending, waiting = [], 0
            for number in np.unique(parts[parts >= 0]).tolist():
                mine = parts == number
                rows = rowids[mine]
                self._partitions[self._scope_names[number]].postings.add_many(
                    str(term), rows, tfs[mine], self._generation[rows]
                )
        lengths += _summed(pending, len(lengths))
        for partition in self._partitions.values():
            partition.set_lengths(lengths)

    # -- search --------------------------------------------------------------------------------

    def vector_search(
        self, queries: Sequence[Sequence[float]], where: SearchFilter, limit: int, exact: ExactVectors | None
    ) -> list[list[Candidate]]:
        """For each query, the best ``limit`` memories by cosine passing ``where``, best first (ties by id).

        The partitions name about a quarter more candidates than asked by their float16 scores;
        ``exact`` reads those rows' float32 vectors, outside the index's lock, and they are ranked
        by the exact cosine. A row gone or rewritten meanwhile is dropped or scored as it is now.
        Without ``exact``, the best ``limit`` by their float16 scores.
        """
        raw = np.asarray(queries, dtype=np.float32).reshape(len(queries), self._dimension)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        matrix: F32 = (raw / np.where(norms == 0, 1, norms)).astype(np.float32)
        excluded = set(where.exclude_ids)
        wide = limit + max(8, limit // 4)
        found: list[list[VectorHit]] = [[] for _ in queries]
        with self._lock.reading():
            for scope in dict.fromkeys(where.scopes):
                partition = self._partitions.get(scope)
                if partition is None or partition.size == 0:
                    continue
                for hits, near in zip(found, partition.nearest(matrix, where, excluded, wide), strict=True):
                    hits.extend(near)
        if exact is None:
            return [ranked([Candidate(h.memory_id, h.score) for h in hits], limit) for hits in found]
        wanted = sorted({h.rowid for hits in found for h in hits})
        rows = exact(wanted) if wanted else {}
        # A row keeps its place only while it is the same memory with a vector of the right size.
        width = self._dimension * 4
        held = [r for r in wanted if r in rows and isinstance(rows[r][1], bytes) and len(rows[r][1]) == width]
        position = {rowid: i for i, rowid in enumerate(held)}
        packed = b"".join(rows[r][1] for r in held)
        vectors = np.frombuffer(packed, dtype=np.float32).reshape(len(held), self._dimension)
        lengths = np.linalg.norm(vectors, axis=1)
        scores = ((vectors @ matrix.T) / np.where(lengths == 0, 1, lengths)[:, None]).tolist()
        answers = []
        for column, hits in enumerate(found):
            exact_hits = [
                Candidate(h.memory_id, scores[position[h.rowid]][column])
                for h in hits
                if h.rowid in position and rows[h.rowid][0] == h.memory_id
            ]
            answers.append(ranked(exact_hits, limit))
        return answers

    def _rows_containing(self, term: str) -> int:
        count = self._containing.get(term)
        if count is None:
            count = sum(p.postings.count(term, self._generation) for p in self._partitions.values())
            self._containing[term] = count
        return count

    def keyword_search(self, words: Sequence[str], where: SearchFilter, limit: int) -> list[Candidate] | None:
        """BM25 for the quoted-word OR query of ``words``, as FTS5 ranks it, best first (ties by id).

        None when a word is not one token (an FTS5 phrase of several, which this index does not
        match): the caller asks FTS5.
        """
        tokens = self._tokenizer.word_tokens(words)
        if any(len(t) != 1 for t in tokens):
            return None
        excluded = set(where.exclude_ids)
        hits: list[Candidate] = []
        with self._lock.reading():
            # FTS5's row count and average length are those of the whole index, every scope.
            rows = sum(p.size for p in self._partitions.values())
            if rows == 0:
                return []
            phrases = [(t[0], bm25_idf(rows, self._rows_containing(t[0]))) for t in tokens]
            average = sum(p.tokens for p in self._partitions.values()) / rows
            for scope in dict.fromkeys(where.scopes):
                partition = self._partitions.get(scope)
                if partition is None or partition.size == 0:
                    continue
                scores = partition.postings.scores(
                    phrases, partition.size, self._slot_of, self._generation, partition.length_norm(average)
                )
                hits += partition.matching(scores, where, excluded, limit)
        return ranked(hits, limit)
