"""The SQLite store's knowledge aggregate: sources, chunks, their FTS5 index and an exact vector cache.

Chunks are searched like memories: BM25 by FTS5 restricted to the scope set, vectors by an exact
float32 product. The vectors of each scope are cached in memory (a matrix and its ids) and the
cache is dropped when ``knowledge_version`` in ``meta`` moves, which every knowledge write does in
its own transaction; so another process's ingest is seen at the next search, as with memories.
A scope's matrix is read again only when that scope is searched.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hivemem.errors import EmbeddingMismatchError, SourceNotFoundError
from hivemem.fusion import Candidate
from hivemem.knowledge import DocumentFormat, KnowledgeChunk, KnowledgeSource
from search.base import ChunkFilter, SourceChunks
from search.sqlite.rows import to_timestamp
from search.sqlite.sql import fts_query, marks

__all__ = ["BUMP_KNOWLEDGE_VERSION", "CHUNK_COLUMNS", "KnowledgeTables", "chunk_from_row"]

F32 = npt.NDArray[np.float32]
_Unit = Callable[[], AbstractContextManager[sqlite3.Connection]]

_SOURCE_COLUMNS = "scope, uri, title, format, content_hash, size, fetched_at, indexed_at, chunk_count, last_error"
CHUNK_COLUMNS = "id, scope, uri, ordinal, text, title, section, page, start_offset, end_offset"
_SOURCE_MARKS = marks(_SOURCE_COLUMNS.split(","))
# Uris bound in one statement of a batch delete: well under SQLite's limit on bound values.
_URIS_PER_STATEMENT = 500
_CHUNK_ROW_MARKS = marks([*CHUNK_COLUMNS.split(","), "embedding"])
BUMP_KNOWLEDGE_VERSION = (
    "INSERT INTO meta(key, value) VALUES ('knowledge_version', '1') "
    "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
)


def _source_row(source: KnowledgeSource) -> tuple[Any, ...]:
    return (
        source.scope,
        source.uri,
        source.title,
        source.format.value,
        source.content_hash,
        source.size,
        to_timestamp(source.fetched_at),
        None if source.indexed_at is None else to_timestamp(source.indexed_at),
        source.chunk_count,
        source.last_error,
    )


def _source_from_row(row: sqlite3.Row) -> KnowledgeSource:
    return KnowledgeSource(
        scope=row["scope"],
        uri=row["uri"],
        title=row["title"],
        format=DocumentFormat(row["format"]),
        content_hash=row["content_hash"],
        size=int(row["size"]),
        fetched_at=datetime.fromisoformat(row["fetched_at"]),
        indexed_at=None if row["indexed_at"] is None else datetime.fromisoformat(row["indexed_at"]),
        chunk_count=int(row["chunk_count"]),
        last_error=row["last_error"],
    )


def chunk_from_row(row: sqlite3.Row, with_embedding: bool) -> KnowledgeChunk:
    blob = row["embedding"] if with_embedding else None
    return KnowledgeChunk(
        id=row["id"],
        scope=row["scope"],
        uri=row["uri"],
        ordinal=int(row["ordinal"]),
        text=row["text"],
        title=row["title"],
        section=tuple(json.loads(row["section"])),
        page=row["page"],
        start=int(row["start_offset"]),
        end=int(row["end_offset"]),
        embedding=None if blob is None else tuple(np.frombuffer(blob, dtype=np.float32).tolist()),
    )


class KnowledgeTables:
    """Knowledge reads and writes over a SQLite store's connections (its ``read``/``write`` units)."""

    def __init__(self, read: _Unit, write: _Unit, dimension: int) -> None:
        self._read = read
        self._write = write
        self._dimension = dimension
        self._lock = threading.Lock()
        self._version: str | None = None
        self._matrices: dict[str, tuple[list[str], F32]] = {}

    # -- writes --------------------------------------------------------------------------------

    def _blob(self, chunk: KnowledgeChunk) -> bytes | None:
        if chunk.embedding is None:
            return None
        if len(chunk.embedding) != self._dimension:
            raise EmbeddingMismatchError(
                f"chunk {chunk.id} has a {len(chunk.embedding)}-dimension vector, the store expects {self._dimension}"
            )
        vector = np.asarray(chunk.embedding, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm else vector).tobytes()

    def replace_source(self, source: KnowledgeSource, chunks: Sequence[KnowledgeChunk]) -> None:
        self.replace_sources([(source, chunks)])

    def replace_sources(self, documents: Sequence[SourceChunks]) -> None:
        rows = [
            [
                (c.id, c.scope, c.uri, c.ordinal, c.text, c.title, json.dumps(list(c.section)), c.page, c.start,
                 c.end, self._blob(c))
                for c in chunks
            ]
            for _, chunks in documents
        ]  # fmt: skip
        # One transaction for the batch: one fsync and one version bump, not one per document.
        with self._write() as conn:
            for (source, _), chunk_rows in zip(documents, rows, strict=True):
                conn.execute("DELETE FROM knowledge_chunks WHERE scope = ? AND uri = ?", (source.scope, source.uri))
                conn.executemany(
                    f"INSERT INTO knowledge_chunks ({CHUNK_COLUMNS}, embedding) VALUES ({_CHUNK_ROW_MARKS})",
                    chunk_rows,
                )
                conn.execute(
                    f"INSERT OR REPLACE INTO knowledge_sources ({_SOURCE_COLUMNS}) VALUES ({_SOURCE_MARKS})",
                    _source_row(source),
                )
            conn.execute(BUMP_KNOWLEDGE_VERSION)

    def record_source_error(self, source: KnowledgeSource) -> None:
        with self._write() as conn:
            updated = conn.execute(
                "UPDATE knowledge_sources SET last_error = ?, fetched_at = ? WHERE scope = ? AND uri = ?",
                (source.last_error, to_timestamp(source.fetched_at), source.scope, source.uri),
            ).rowcount
            if not updated:
                conn.execute(
                    f"INSERT INTO knowledge_sources ({_SOURCE_COLUMNS}) VALUES ({_SOURCE_MARKS})",
                    _source_row(source),
                )

    def delete_source(self, scope: str, uri: str) -> KnowledgeSource:
        removed = self.delete_sources(scope, [uri])
        if not removed:
            raise SourceNotFoundError(f"no indexed document {uri!r} in scope {scope!r}")
        return removed[0]

    def delete_sources(self, scope: str, uris: Sequence[str]) -> list[KnowledgeSource]:
        wanted = list(dict.fromkeys(uris))
        rows: list[sqlite3.Row] = []
        with self._write() as conn:  # one transaction: all of them go, or none
            for start in range(0, len(wanted), _URIS_PER_STATEMENT):
                part = wanted[start : start + _URIS_PER_STATEMENT]
                named = f"scope = ? AND uri IN ({marks(part)})"
                rows += conn.execute(f"SELECT {_SOURCE_COLUMNS} FROM knowledge_sources WHERE {named}", (scope, *part))
                conn.execute(f"DELETE FROM knowledge_chunks WHERE {named}", (scope, *part))
                conn.execute(f"DELETE FROM knowledge_sources WHERE {named}", (scope, *part))
            if rows:
                conn.execute(BUMP_KNOWLEDGE_VERSION)
        removed = {source.uri: source for source in map(_source_from_row, rows)}
        return [removed[uri] for uri in wanted if uri in removed]

    # -- reads ---------------------------------------------------------------------------------

    def get_source(self, scope: str, uri: str) -> KnowledgeSource | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_SOURCE_COLUMNS} FROM knowledge_sources WHERE scope = ? AND uri = ?", (scope, uri)
            ).fetchone()
        return None if row is None else _source_from_row(row)

    def sources(self, scopes: Sequence[str]) -> list[KnowledgeSource]:
        if not scopes:
            return []
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_SOURCE_COLUMNS} FROM knowledge_sources WHERE scope IN ({marks(scopes)}) ORDER BY scope, uri",
                tuple(scopes),
            ).fetchall()
        return [_source_from_row(row) for row in rows]

    def source_scopes(self) -> list[str]:
        with self._read() as conn:
            rows = conn.execute("SELECT DISTINCT scope FROM knowledge_sources ORDER BY scope").fetchall()
        return [str(row[0]) for row in rows]

    def source_chunks(self, scope: str, uri: str) -> list[KnowledgeChunk]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS}, embedding FROM knowledge_chunks WHERE scope = ? AND uri = ? ORDER BY ordinal",
                (scope, uri),
            ).fetchall()
        return [chunk_from_row(row, with_embedding=True) for row in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[KnowledgeChunk]:
        if not chunk_ids:
            return []
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM knowledge_chunks WHERE id IN ({marks(chunk_ids)})", tuple(chunk_ids)
            ).fetchall()
        by_id = {row["id"]: chunk_from_row(row, with_embedding=False) for row in rows}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def scan_chunks(self, where: ChunkFilter) -> Iterator[KnowledgeChunk]:
        clause, params = self._clause(where)
        with self._read() as conn:
            cursor = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM knowledge_chunks c WHERE {clause} ORDER BY scope, uri, ordinal", params
            )
            while rows := cursor.fetchmany(500):
                for row in rows:
                    yield chunk_from_row(row, with_embedding=False)

    @staticmethod
    def _clause(where: ChunkFilter) -> tuple[str, list[Any]]:
        clause = f"c.scope IN ({marks(where.scopes)})"
        params: list[Any] = list(where.scopes)
        if where.uri is not None:
            clause += " AND c.uri = ?"
            params.append(where.uri)
        return clause, params

    def chunk_keyword_search(self, text: str, where: ChunkFilter, limit: int) -> list[Candidate]:
        query = fts_query(text)
        if query is None or limit < 1:
            return []
        clause, params = self._clause(where)
        # bm25() is lower-is-better; negated so that every leg is higher-is-better.
        sql = (
            "SELECT c.id AS id, -bm25(knowledge_fts) AS score FROM knowledge_fts "
            "JOIN knowledge_chunks c ON c.rowid = knowledge_fts.rowid "
            f"WHERE knowledge_fts MATCH ? AND {clause} ORDER BY bm25(knowledge_fts), c.id LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(sql, (query, *params, limit)).fetchall()
        return [Candidate(row["id"], float(row["score"])) for row in rows]

    def _scope_matrix(self, conn: sqlite3.Connection, scope: str) -> tuple[list[str], F32]:
        cached = self._matrices.get(scope)
        if cached is None:
            rows = conn.execute(
                "SELECT id, embedding FROM knowledge_chunks WHERE scope = ? AND embedding IS NOT NULL", (scope,)
            ).fetchall()
            matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(
                len(rows), self._dimension
            )
            cached = self._matrices[scope] = ([row[0] for row in rows], matrix)
        return cached

    def chunk_vector_search(self, vector: Sequence[float], where: ChunkFilter, limit: int) -> list[Candidate]:
        if len(vector) != self._dimension:
            raise EmbeddingMismatchError(
                f"query vector has {len(vector)} dimensions, the store expects {self._dimension}"
            )
        if limit < 1:
            return []
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        query = query / norm if norm else query
        hits: list[Candidate] = []
        with self._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'knowledge_version'").fetchone()
            version = "0" if row is None else str(row[0])
            with self._lock:
                if version != self._version:
                    self._matrices.clear()
                    self._version = version
                wanted = None
                if where.uri is not None:
                    clause, params = self._clause(where)
                    wanted = {r[0] for r in conn.execute(f"SELECT id FROM knowledge_chunks c WHERE {clause}", params)}
                for scope in dict.fromkeys(where.scopes):
                    ids, matrix = self._scope_matrix(conn, scope)
                    if not ids:
                        continue
                    scores = matrix @ query
                    slots = (
                        np.arange(len(ids))
                        if wanted is None
                        else np.flatnonzero(np.fromiter((i in wanted for i in ids), dtype=np.bool_, count=len(ids)))
                    )
                    if limit < len(slots):
                        # Everything tied with the k-th score stays in, so ties are broken by id.
                        kth = np.partition(-scores[slots], limit - 1)[limit - 1]
                        slots = slots[-scores[slots] <= kth]
                    hits += [Candidate(ids[s], float(scores[s])) for s in slots.tolist()]
        hits.sort(key=lambda c: (-c.score, c.id))
        return hits[:limit]
