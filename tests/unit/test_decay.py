from __future__ import annotations

from datetime import timedelta

import pytest

from hivemem.decay import STRENGTH_FLOOR, half_life_days, rescore, strength, trust_factor
from hivemem.model import Memory, MemoryType, Source, utcnow


def _memory(**kw: object) -> Memory:
    base: dict[str, object] = {
        "id": "m",
        "scope": "",
        "title": "title",
        "content": "some content",
        "content_hash": "h",
    }
    return Memory(**(base | kw))  # type: ignore[arg-type]


def test_strength_halves_after_one_half_life() -> None:
    now = utcnow()
    fresh = strength(_memory(importance=0.8, created_at=now), now, base_half_life_days=90, access_boost=0.0)
    old = strength(
        _memory(importance=0.8, created_at=now - timedelta(days=90)),
        now,
        base_half_life_days=90,
        access_boost=0.0,
    )
    assert fresh == pytest.approx(0.8)
    assert old == pytest.approx(0.4)


def test_half_life_depends_on_type() -> None:
    assert (
        half_life_days(MemoryType.DECISION, 90)
        > half_life_days(MemoryType.FACT, 90)
        > half_life_days(MemoryType.FAILURE, 90)
    )


def test_strength_has_a_floor_and_a_cap() -> None:
    now = utcnow()
    ancient = _memory(importance=0.5, created_at=now - timedelta(days=100_000))
    assert strength(ancient, now, base_half_life_days=90, access_boost=0.1) == STRENGTH_FLOOR
    loved = _memory(importance=1.0, created_at=now, access_count=1_000)
    assert strength(loved, now, base_half_life_days=90, access_boost=0.5) == 1.0


def test_access_refreshes_and_boosts() -> None:
    now = utcnow()
    created = now - timedelta(days=180)
    unused = _memory(created_at=created)
    used = _memory(created_at=created, last_accessed_at=now - timedelta(days=1), access_count=5)
    kw = {"base_half_life_days": 90.0, "access_boost": 0.1}
    assert strength(used, now, **kw) > strength(unused, now, **kw)


def test_trust_ranks_confirmed_above_inferred() -> None:
    kw = {"agent_inferred": 0.9, "imported": 0.95}
    assert trust_factor(Source.USER_CONFIRMED, **kw) == 1.0
    assert trust_factor(Source.AGENT_INFERRED, **kw) == 0.9
    assert trust_factor(Source.IMPORTED, **kw) == 0.95


def test_rescore_moves_relevance_by_strength_and_trust() -> None:
    assert rescore(0.8, 1.0, 1.0, decay_weight=0.3) == pytest.approx(0.8)
    assert rescore(0.8, 0.05, 1.0, decay_weight=0.3) == pytest.approx(0.8 * 0.715)
    assert rescore(0.8, 1.0, 0.9, decay_weight=0.0) == pytest.approx(0.72)
