"""The SQLite store's token records: one row per token, a keyed hash and never the token itself."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from hivemem.access import Grant
from hivemem.errors import DuplicateMemoryError, TokenNotFoundError
from hivemem.tokens import TokenRecord
from search.sqlite.rows import from_timestamp, to_timestamp

__all__ = ["all_tokens", "insert_token", "read_token", "revoke_token"]

_COLUMNS = "id, principal, grants, digest, created_at, expires_at, revoked_at, created_by"


def _grants_json(grants: tuple[Grant, ...]) -> str:
    return json.dumps([g.as_dict() for g in grants])


def _record(row: sqlite3.Row) -> TokenRecord:
    return TokenRecord(
        id=row["id"],
        principal=row["principal"],
        grants=tuple(Grant.from_dict(g) for g in json.loads(row["grants"])),
        digest=row["digest"],
        created_at=datetime.fromisoformat(row["created_at"]),
        expires_at=from_timestamp(row["expires_at"]),
        revoked_at=from_timestamp(row["revoked_at"]),
        created_by=row["created_by"],
    )


def insert_token(conn: sqlite3.Connection, record: TokenRecord) -> None:
    """Add ``record``; raises ``DuplicateMemoryError`` when its id is taken."""
    try:
        conn.execute(
            f"INSERT INTO tokens({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.id,
                record.principal,
                _grants_json(record.grants),
                record.digest,
                to_timestamp(record.created_at),
                to_timestamp(record.expires_at),
                to_timestamp(record.revoked_at),
                record.created_by,
            ),
        )
    except sqlite3.IntegrityError as exc:
        raise DuplicateMemoryError(f"a token with id {record.id} exists") from exc


def read_token(conn: sqlite3.Connection, token_id: str) -> TokenRecord | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM tokens WHERE id = ?", (token_id,)).fetchone()
    return None if row is None else _record(row)


def all_tokens(conn: sqlite3.Connection) -> list[TokenRecord]:
    return [_record(row) for row in conn.execute(f"SELECT {_COLUMNS} FROM tokens ORDER BY created_at, id")]


def revoke_token(conn: sqlite3.Connection, token_id: str, at: datetime) -> TokenRecord:
    """Mark the token revoked (its first revocation time stays); raises ``TokenNotFoundError``."""
    conn.execute("UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (to_timestamp(at), token_id))
    record = read_token(conn, token_id)
    if record is None:
        raise TokenNotFoundError(f"no token with id {token_id!r}")
    return record
