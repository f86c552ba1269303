"""Re-embedding a SQLite store: new vectors staged beside the old, then swapped in by one transaction.

The staging table holds, per model, a vector for each memory (with the content hash it was made
from: a memory whose content changed since is pending again) and each chunk (whose id already
names its content). The swap runs in one write transaction, so no write can land between finding
nothing pending and the vectors changing: a write embedded with the old model after that is refused
by the store's model check and retried by its caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from hivemem.errors import EmbeddingMismatchError
from hivemem.knowledge import KnowledgeChunk
from hivemem.model import Memory
from search.capabilities import ReembedBatch
from search.sqlite.knowledge import BUMP_KNOWLEDGE_VERSION, CHUNK_COLUMNS, chunk_from_row
from search.sqlite.rows import memory_from_row
from search.sqlite.schema import MEMORY_COLUMNS

__all__ = ["REEMBED_SCHEMA", "pending", "remaining", "stage", "swap"]

REEMBED_SCHEMA = """
CREATE TABLE IF NOT EXISTS reembed_staging (
    model TEXT NOT NULL,
    kind TEXT NOT NULL,  -- 'm': a memory, 'c': a knowledge chunk
    id TEXT NOT NULL,
    stamp TEXT NOT NULL,  -- the memory's content hash when its vector was made ('' for a chunk)
    embedding BLOB NOT NULL,
    PRIMARY KEY (model, kind, id)
);
"""

_MEMORY_PENDING = (
    "FROM memories m WHERE NOT EXISTS (SELECT 1 FROM reembed_staging r "
    "WHERE r.model = ? AND r.kind = 'm' AND r.id = m.id AND r.stamp = m.content_hash)"
)
_CHUNK_PENDING = (
    "FROM knowledge_chunks c WHERE NOT EXISTS (SELECT 1 FROM reembed_staging r "
    "WHERE r.model = ? AND r.kind = 'c' AND r.id = c.id)"
)


def remaining(conn: sqlite3.Connection, model: str) -> int:
    """Memories and chunks without a staged vector for ``model``."""
    (memories,) = conn.execute(f"SELECT count(*) {_MEMORY_PENDING}", (model,)).fetchone()
    (chunks,) = conn.execute(f"SELECT count(*) {_CHUNK_PENDING}", (model,)).fetchone()
    return int(memories) + int(chunks)


def pending(conn: sqlite3.Connection, model: str, limit: int) -> ReembedBatch:
    """Up to ``limit`` memories, then chunks, without a staged vector for ``model``."""
    memory_columns = ", ".join(f"m.{c.strip()}" for c in MEMORY_COLUMNS.split(","))
    rows = conn.execute(f"SELECT {memory_columns} {_MEMORY_PENDING} LIMIT ?", (model, limit)).fetchall()
    memories = [memory_from_row(row) for row in rows]
    chunks: list[KnowledgeChunk] = []
    if len(memories) < limit:
        chunk_columns = ", ".join(f"c.{c.strip()}" for c in CHUNK_COLUMNS.split(","))
        chunk_rows = conn.execute(
            f"SELECT {chunk_columns}, NULL AS embedding {_CHUNK_PENDING} LIMIT ?", (model, limit - len(memories))
        ).fetchall()
        chunks = [chunk_from_row(row, with_embedding=False) for row in chunk_rows]
    return ReembedBatch(memories, chunks)


def _checked(vector: Sequence[float], dimension: int, what: str) -> np.ndarray:
    if len(vector) != dimension:
        raise EmbeddingMismatchError(f"{what} has a {len(vector)}-dimension vector, the model makes {dimension}")
    return np.asarray(vector, dtype=np.float32)


def stage(
    conn: sqlite3.Connection,
    model: str,
    dimension: int,
    memories: Sequence[tuple[Memory, Sequence[float]]],
    chunks: Sequence[tuple[KnowledgeChunk, Sequence[float]]],
) -> None:
    """Stage vectors in the stores' own encodings: a memory's as given, a chunk's normalised."""
    rows = [(model, "m", m.id, m.content_hash, _checked(v, dimension, f"memory {m.id}").tobytes()) for m, v in memories]
    for chunk, vector in chunks:
        array = _checked(vector, dimension, f"chunk {chunk.id}")
        norm = float(np.linalg.norm(array))
        rows.append((model, "c", chunk.id, "", (array / norm if norm else array).tobytes()))
    conn.executemany(
        "INSERT OR REPLACE INTO reembed_staging(model, kind, id, stamp, embedding) VALUES (?, ?, ?, ?, ?)", rows
    )


def swap(conn: sqlite3.Connection, model: str, dimension: int) -> bool:
    """In the caller's write transaction: the staged vectors become the store's, and ``model`` its
    model (False, nothing changed, while anything is pending)."""
    if remaining(conn, model):
        return False
    staged = "SELECT r.embedding FROM reembed_staging r WHERE r.model = ? AND r.kind = '{kind}' AND r.id = {table}.id"
    conn.execute(
        f"UPDATE memories SET embedding = ({staged.format(kind='m', table='memories')}), embedding_model = ?",
        (model, model),
    )
    conn.execute(
        f"UPDATE knowledge_chunks SET embedding = ({staged.format(kind='c', table='knowledge_chunks')})", (model,)
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'embedding_model'", (model,))
    conn.execute("UPDATE meta SET value = ? WHERE key = 'dimension'", (str(dimension),))
    conn.execute("DELETE FROM reembed_staging")
    conn.execute(BUMP_KNOWLEDGE_VERSION)  # every process's chunk vectors are read again
    return True
