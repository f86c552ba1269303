"""A second model's vectors of the memories of a SQLite store, for recall's second dense leg.

They live in a table of their own, one row per memory and model with the content hash the vector
was made from (a memory whose content changed since is pending again, and scores nothing until it
has a new vector), and go when their memory does (a trigger). They are derived data: a store
exported and imported elsewhere, or a table dropped, is filled again by
:class:`workers.second_model.SecondLeg`.

Finding what is pending reads the store's change log (``vector_changes``, which logs every insert
and every content rewrite) from where the last look ended: at a million memories a scan of every
row for a missing vector took a second, every time the filler looked. The first look, and a look
after the log was pruned past that point, scan every row.

Recall reads these vectors for its candidates only (the other legs' top 100 or so, an indexed read
of a few hundred rows), so the leg needs no second in-memory index of every vector. A leg that
brought the second model's own top 100 instead ranked the same within noise (SciFact nDCG@10 0.745
against 0.744, LoCoMo hit@5 0.753 against 0.750; bench/RESULTS.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from hivemem.fusion import Candidate
from hivemem.model import Memory
from search.sqlite.rows import memory_from_row
from search.sqlite.schema import MEMORY_COLUMNS_WITHOUT_VECTOR
from search.vector_math import checked_unit, ranked_cosines, unit

__all__ = ["SECOND_VECTORS_SCHEMA", "keep_only", "pending", "put", "remaining", "scores"]

SECOND_VECTORS_SCHEMA = """
CREATE TABLE IF NOT EXISTS second_vectors (
    id TEXT NOT NULL,
    model TEXT NOT NULL,
    stamp TEXT NOT NULL,  -- the memory's content hash when its vector was made
    embedding BLOB NOT NULL,  -- float32, unit length
    PRIMARY KEY (id, model)
);
CREATE TRIGGER IF NOT EXISTS memories_second_ad AFTER DELETE ON memories BEGIN
    DELETE FROM second_vectors WHERE id = old.id;
END;
"""

_MISSING = "NOT EXISTS (SELECT 1 FROM second_vectors s WHERE s.id = m.id AND s.model = ? AND s.stamp = m.content_hash)"
_COLUMNS = ", ".join(
    f"m.{c.strip()}" if " AS " not in c else c.strip() for c in MEMORY_COLUMNS_WITHOUT_VECTOR.split(",")
)
_IDS_PER_QUERY = 500  # well under SQLite's limit of bound parameters


def remaining(conn: sqlite3.Connection, model: str) -> int:
    """Memories without a current ``model`` vector."""
    (count,) = conn.execute(f"SELECT count(*) FROM memories m WHERE {_MISSING}", (model,)).fetchone()
    return int(count)


def pending(conn: sqlite3.Connection, model: str, limit: int, after: int | None) -> tuple[list[Memory], int | None]:
    """Up to ``limit`` memories without a current ``model`` vector, and where the next look starts.

    ``after`` is a position in the change log that every change up to has been looked at (None: look
    at every row). The position returned moves to the log's head once a look finds fewer than
    ``limit``, so what it named must be stored before the next look, or that look must start over.
    """
    head = conn.execute("SELECT MAX(seq) FROM vector_changes").fetchone()[0] or 0
    oldest = conn.execute("SELECT MIN(seq) FROM vector_changes").fetchone()[0]
    if after is None or (oldest is not None and oldest > after + 1):
        sql = f"SELECT {_COLUMNS} FROM memories m WHERE {_MISSING} LIMIT ?"
        rows = conn.execute(sql, (model, limit)).fetchall()
    else:
        sql = (
            f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid IN "
            f"(SELECT row FROM vector_changes WHERE seq > ?) AND {_MISSING} LIMIT ?"
        )
        rows = conn.execute(sql, (after, model, limit)).fetchall()
    return [memory_from_row(row) for row in rows], (head if len(rows) < limit else after)


def keep_only(conn: sqlite3.Connection, model: str) -> int:
    """In the caller's write transaction: drop every other model's vectors; how many went."""
    return conn.execute("DELETE FROM second_vectors WHERE model != ?", (model,)).rowcount


def put(
    conn: sqlite3.Connection, model: str, dimension: int, vectors: Sequence[tuple[Memory, Sequence[float]]]
) -> None:
    """In the caller's write transaction: keep each memory's vector for the content it was made from,
    unless the memory is gone."""
    rows = [
        (m.id, model, m.content_hash, checked_unit(v, dimension, f"memory {m.id}").tobytes(), m.id) for m, v in vectors
    ]
    conn.executemany(
        "INSERT OR REPLACE INTO second_vectors(id, model, stamp, embedding) "
        "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?)",
        rows,
    )


def scores(conn: sqlite3.Connection, model: str, vector: Sequence[float], memory_ids: Sequence[str]) -> list[Candidate]:
    """The cosine of ``vector`` with each memory's current ``model`` vector, best first (ties by id)."""
    query = unit(vector)
    width = query.size * 4
    ids: list[str] = []
    blobs: list[bytes] = []
    unique = list(dict.fromkeys(memory_ids))
    for start in range(0, len(unique), _IDS_PER_QUERY):
        part = unique[start : start + _IDS_PER_QUERY]
        marks = ", ".join("?" * len(part))
        for memory_id, blob in conn.execute(
            "SELECT s.id, s.embedding FROM second_vectors s JOIN memories m ON m.id = s.id "
            f"WHERE s.model = ? AND s.id IN ({marks}) AND s.stamp = m.content_hash",
            (model, *part),
        ):
            if isinstance(blob, bytes) and len(blob) == width:  # another size: not this query's model
                ids.append(memory_id)
                blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), query.size)
    return ranked_cosines(query, ids, matrix)
