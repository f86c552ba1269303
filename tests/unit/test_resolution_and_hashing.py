from __future__ import annotations

from dataclasses import replace

from hivemem.hashing import content_hash
from hivemem.model import Memory, Source, WriteOutcome, utcnow
from hivemem.resolution import resolve


def _memory(memory_id: str, **kw: object) -> Memory:
    base: dict[str, object] = {
        "id": memory_id,
        "scope": "s",
        "title": "title",
        "content": "content here",
        "content_hash": content_hash("content here"),
    }
    return Memory(**(base | kw))  # type: ignore[arg-type]


def test_content_hash_ignores_case_and_whitespace_only() -> None:
    assert content_hash("Use  WAL\nmode ") == content_hash("use wal mode")
    assert content_hash("use wal mode") != content_hash("use wal modes")


def test_new_content_is_stored() -> None:
    incoming = _memory("new")
    assert resolve(incoming, None, utcnow()).outcome is WriteOutcome.STORED


def test_exact_duplicate_reinforces_existing() -> None:
    now = utcnow()
    existing = _memory("old", importance=0.4, tags=["a"], access_count=2)
    incoming = _memory("new", importance=0.9, tags=["b"], source=Source.USER_CONFIRMED)
    resolution = resolve(incoming, existing, now)
    assert resolution.outcome is WriteOutcome.REINFORCED
    kept = resolution.memory
    assert kept.id == "old"
    assert kept.importance == 0.9
    assert kept.tags == ["a", "b"]
    assert kept.access_count == 3
    assert kept.source is Source.USER_CONFIRMED
    assert kept.last_accessed_at == now


def test_confirmation_is_never_downgraded() -> None:
    existing = _memory("old", source=Source.USER_CONFIRMED)
    kept = resolve(_memory("new"), existing, utcnow()).memory
    assert kept.source is Source.USER_CONFIRMED


def test_redelivered_job_sees_its_own_id_as_stored() -> None:
    incoming = _memory("same")
    assert resolve(incoming, replace(incoming), utcnow()).outcome is WriteOutcome.STORED
