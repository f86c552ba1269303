"""The SQLite store's tables beside the memories: relations, the audit log and tokens. Each method
is one unit of work (or one read) on :class:`search.sqlite.database.SQLiteDatabase`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from hivemem.audit import AuditQuery
from hivemem.errors import AuditNotFoundError
from hivemem.model import AuditEvent, Relation
from hivemem.tokens import TokenRecord
from search.base import missing_end
from search.sqlite import tokens as token_rows
from search.sqlite.database import SQLiteDatabase
from search.sqlite.rows import audit_from_row, relation_from_row, to_timestamp
from search.sqlite.sql import IN_CHUNK, marks

__all__ = ["SQLiteRecords"]


class SQLiteRecords(SQLiteDatabase):
    """Relations, audit events and tokens in the SQLite file."""

    # -- relations ---------------------------------------------------------------------------

    def add_relation(self, relation: Relation) -> None:
        self.add_relations([relation])

    def add_relations(self, relations: Sequence[Relation]) -> None:
        if not relations:
            return
        ends = sorted({end for r in relations for end in (r.source_id, r.target_id)})
        with self._write() as conn:
            found: set[str] = set()
            for start in range(0, len(ends), IN_CHUNK):
                chunk = ends[start : start + IN_CHUNK]
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

    def relations(self, memory_id: str) -> list[Relation]:
        return self.relations_of([memory_id])

    def relations_of(self, memory_ids: Sequence[str]) -> list[Relation]:
        ids = list(dict.fromkeys(memory_ids))
        found: dict[tuple[str, str, str], Relation] = {}
        with self._read() as conn:
            for start in range(0, len(ids), IN_CHUNK):
                chunk = ids[start : start + IN_CHUNK]
                where = marks(chunk)
                sql = f"SELECT * FROM relations WHERE source_id IN ({where}) OR target_id IN ({where})"
                for row in conn.execute(sql, [*chunk, *chunk]):
                    relation = relation_from_row(row)
                    found[relation.key] = relation
        return sorted(found.values(), key=Relation.oldest_first)

    def remove_relation(self, relation: Relation) -> bool:
        with self._write() as conn:
            removed = conn.execute(
                "DELETE FROM relations WHERE source_id = ? AND target_id = ? AND type = ?",
                (relation.source_id, relation.target_id, relation.type.value),
            ).rowcount
        return bool(removed)

    # -- audit -------------------------------------------------------------------------------

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

    def audit_event(self, event_id: str) -> AuditEvent:
        if not event_id.isdigit():
            raise AuditNotFoundError(f"no audit record with id {event_id}")
        with self._read() as conn:
            row = conn.execute("SELECT * FROM audit WHERE seq = ?", (int(event_id),)).fetchone()
        if row is None:
            raise AuditNotFoundError(f"no audit record with id {event_id}")
        return audit_from_row(row)

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

    # -- tokens --------------------------------------------------------------------------------

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
