"""Mapping between domain objects and the ``_source`` documents of the OpenSearch store."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from hivemem.codec import memory_from_json, memory_to_json
from hivemem.errors import EmbeddingMismatchError
from hivemem.model import AuditEvent, Memory, Relation, RelationType

__all__ = [
    "STAMP_FIELD",
    "audit_doc",
    "audit_from_doc",
    "audit_lines",
    "claim_id",
    "from_iso",
    "memory_doc",
    "memory_from_doc",
    "relation_doc",
    "relation_from_doc",
    "relation_id",
    "scope_lease_id",
    "to_iso",
]

Json = dict[str, Any]


def to_iso(value: datetime) -> str:
    """UTC, microseconds, ``Z``: a form every OpenSearch date format parses and sorts as time."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_iso(value: str) -> datetime:
    """The tz-aware UTC datetime of a stored timestamp."""
    return datetime.fromisoformat(value).astimezone(UTC)


def _digest(*parts: str) -> str:
    # NUL cannot occur in a scope or hash, so the joined key is unambiguous.
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def claim_id(scope: str, content_hash: str) -> str:
    """The id of the claim document on ``(scope, content_hash)``."""
    return _digest("claim", scope, content_hash)


def scope_lease_id(scope: str) -> str:
    """The id of the lease document that serializes planned writes into ``scope`` (in the claims index)."""
    return _digest("scope-lease", scope)


def sleep_lease_id() -> str:
    """The id of the lease document that lets one process at a time run a sleep pass (in the claims index)."""
    return _digest("sleep-lease")


def relation_id(relation: Relation) -> str:
    """The id of an edge's document: one per source, target and type, so writes are idempotent."""
    return _digest("relation", relation.source_id, relation.target_id, relation.type.value)


STAMP_FIELD = "stored_at_ms"
"""When the store last wrote a memory's document, by the writer's clock (ms since the epoch): how
the second model's filler finds what changed (:mod:`search.opensearch.second_vectors`)."""


def memory_doc(m: Memory, dimension: int, *, stamp_ms: int | None = None) -> Json:
    """The document of ``m``, stamped now (or with ``stamp_ms``, a write that changes no content may
    keep the stamp it had). Raises ``EmbeddingMismatchError`` for a vector that is not ``dimension`` long."""
    if m.embedding is not None and len(m.embedding) != dimension:
        raise EmbeddingMismatchError(f"embedding has {len(m.embedding)} dimensions, the store expects {dimension}")
    doc = memory_to_json(m, format_date=to_iso)
    if doc["embedding"] is None:
        del doc["embedding"]  # no vector: found by keyword search only
    doc.pop("requested_links", None)  # the memorize job's to apply, stored as relations
    doc[STAMP_FIELD] = stamp_ms if stamp_ms is not None else int(time.time() * 1000)
    return doc


def memory_from_doc(doc: Json) -> Memory:
    """The memory a document holds, timestamps in UTC."""
    memory = memory_from_json(doc)
    for name in ("created_at", "updated_at", "last_accessed_at", "valid_from", "valid_to", "verified_at"):
        value = getattr(memory, name)
        if value is not None:
            setattr(memory, name, value.astimezone(UTC))
    return memory


def relation_doc(r: Relation) -> Json:
    """The document of an edge."""
    return {
        "source_id": r.source_id,
        "target_id": r.target_id,
        "type": r.type.value,
        "strength": float(r.strength),
        "author": r.author,
        "created_at": to_iso(r.created_at),
        "description": r.description,
    }


def relation_from_doc(doc: Json) -> Relation:
    """The edge a document holds."""
    return Relation(
        source_id=doc["source_id"],
        target_id=doc["target_id"],
        type=RelationType(doc["type"]),
        strength=float(doc["strength"]),
        author=doc.get("author", ""),
        created_at=from_iso(doc["created_at"]),
        description=doc.get("description", ""),
    )


def audit_doc(event: AuditEvent, seq: int, event_id: str) -> Json:
    """The document of an audit record; ``seq`` orders the log, ``event_id`` breaks its ties."""
    return {
        "seq": seq,
        "event_id": event_id,
        "action": event.action,
        "memory_id": event.memory_id,
        "scope": event.scope,
        "author": event.author,
        "detail": event.detail,
        "at": to_iso(event.at),
    }


def audit_lines(index: str, events: Sequence[AuditEvent]) -> list[Json]:
    """The ``_bulk`` lines that append ``events`` to ``index`` in their order: ``seq`` from the
    clock in nanoseconds, a microsecond apart, as a double holds today's nanosecond clock only to
    256 ns (and some engines and clients read a long as one: one nanosecond apart, a batch's
    records came back in their ids' order)."""
    seq = time.time_ns()
    lines: list[Json] = []
    for offset, event in enumerate(events):
        event_id = uuid.uuid4().hex
        lines += [{"create": {"_index": index, "_id": event_id}}, audit_doc(event, seq + offset * 1_000, event_id)]
    return lines


def audit_from_doc(doc: Json) -> AuditEvent:
    """The audit event a document holds."""
    return AuditEvent(
        action=doc["action"],
        memory_id=doc["memory_id"],
        scope=doc["scope"],
        author=doc["author"],
        detail=dict(doc.get("detail") or {}),
        at=from_iso(doc["at"]),
        id=str(doc["event_id"]),
    )
