"""The OpenSearch store's token records: one document per token in the tokens index, never the token."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hivemem.access import Grant
from hivemem.errors import DuplicateMemoryError, TokenNotFoundError
from hivemem.tokens import TokenRecord
from search.opensearch.bodies import IndexNames
from search.opensearch.cluster import Cluster

__all__ = ["TokenIndex"]

Json = dict[str, Any]


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _doc(record: TokenRecord) -> Json:
    return {
        "id": record.id,
        "principal": record.principal,
        "grants": {"list": [g.as_dict() for g in record.grants]},
        "digest": record.digest,
        "created_at": _stamp(record.created_at),
        "expires_at": _stamp(record.expires_at),
        "revoked_at": _stamp(record.revoked_at),
        "created_by": record.created_by,
    }


def _record(doc: Json) -> TokenRecord:
    def when(value: str | None) -> datetime | None:
        return None if value is None else datetime.fromisoformat(value)

    return TokenRecord(
        id=doc["id"],
        principal=doc["principal"],
        grants=tuple(Grant.from_dict(g) for g in doc["grants"]["list"]),
        digest=doc["digest"],
        created_at=datetime.fromisoformat(doc["created_at"]),
        expires_at=when(doc.get("expires_at")),
        revoked_at=when(doc.get("revoked_at")),
        created_by=doc.get("created_by", ""),
    )


class TokenIndex:
    """Token records in ``names.tokens``: created once by id, read by realtime GET, revoked on their version."""

    def __init__(self, cluster: Cluster, names: IndexNames) -> None:
        self._cluster = cluster
        self._alias = names.tokens

    def put(self, record: TokenRecord) -> None:
        line = {"create": {"_index": self._alias, "_id": record.id}}
        (item,) = self._cluster.bulk([line, _doc(record)], refresh="wait_for")
        if int(item.get("status", 201)) == 409:
            raise DuplicateMemoryError(f"a token with id {record.id} exists")

    def get(self, token_id: str) -> TokenRecord | None:
        held = self._cluster.get_doc(self._alias, token_id)
        if held is None or not held.get("found", False):
            return None
        return _record(held["_source"])

    def all(self) -> list[TokenRecord]:
        docs = self._cluster.scan(self._alias, {"match_all": {}}, [{"created_at": "asc"}, {"id": "asc"}])
        return [_record(doc) for doc in docs]

    def revoke(self, token_id: str, at: datetime) -> TokenRecord:
        while True:
            held = self._cluster.get_doc(self._alias, token_id)
            if held is None or not held.get("found", False):
                raise TokenNotFoundError(f"no token with id {token_id!r}")
            current = _record(held["_source"])
            if current.revoked_at is not None:
                return current
            revoked = current.revoked(at)
            line = {
                "index": {
                    "_index": self._alias,
                    "_id": token_id,
                    "if_seq_no": held["_seq_no"],
                    "if_primary_term": held["_primary_term"],
                }
            }
            (item,) = self._cluster.bulk([line, _doc(revoked)], refresh="wait_for")
            if int(item.get("status", 200)) != 409:
                return revoked
            # Someone changed it between the read and the write (revoked it too): read it again.
