"""Decay and trust: pure rescoring signals computed at query time (no writes).

``strength = importance · 0.5^(age_days / half_life(type)) · (1 + boost · ln(1 + accesses))``,
floored at 0.05 and capped at 1. Decay ranks; it never deletes. Age counts from the last access
when there was one, so a memory that keeps being recalled stays fresh.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from hivemem.model import Memory, MemoryType, Source

__all__ = [
    "ARCHIVE_IDLE_DAYS",
    "HALF_LIFE_FACTORS",
    "STRENGTH_FLOOR",
    "archivable",
    "half_life_days",
    "raw_strength",
    "rescore",
    "strength",
    "trust_factor",
]

STRENGTH_FLOOR = 0.05

# Relative to the base half-life: failures and progress notes go stale fast, decisions and
# strategy are what a team wants to find a year later.
HALF_LIFE_FACTORS: Mapping[MemoryType, float] = {
    MemoryType.FAILURE: 0.33,
    MemoryType.PROGRESS: 0.33,
    MemoryType.HANDOFF: 0.2,
    MemoryType.BUG_FIX: 1.0,
    MemoryType.FACT: 1.0,
    MemoryType.CONVERSATION: 1.0,
    MemoryType.INSIGHT: 1.5,
    MemoryType.GOAL: 1.5,
    MemoryType.PREFERENCE: 2.0,
    MemoryType.ARCHITECTURE: 3.0,
    MemoryType.DECISION: 3.0,
    MemoryType.STRATEGY: 3.0,
}


def half_life_days(memory_type: MemoryType, base_days: float) -> float:
    """The half-life of one memory type, in days."""
    return base_days * HALF_LIFE_FACTORS.get(memory_type, 1.0)


ARCHIVE_IDLE_DAYS = 7.0


def _idle_days(memory: Memory, now: datetime) -> float:
    reference = memory.last_accessed_at or memory.created_at
    return max(0.0, (now - reference).total_seconds() / 86400.0)


def raw_strength(memory: Memory, now: datetime, *, base_half_life_days: float, access_boost: float) -> float:
    """The strength formula before the floor and the cap: below ``STRENGTH_FLOOR``, a memory has faded."""
    decayed = math.pow(0.5, _idle_days(memory, now) / half_life_days(memory.memory_type, base_half_life_days))
    return memory.importance * decayed * (1.0 + access_boost * math.log1p(memory.access_count))


def strength(memory: Memory, now: datetime, *, base_half_life_days: float, access_boost: float) -> float:
    """How alive a memory is now, in [0.05, 1]."""
    boosted = raw_strength(memory, now, base_half_life_days=base_half_life_days, access_boost=access_boost)
    return min(1.0, max(STRENGTH_FLOOR, boosted))


def archivable(memory: Memory, now: datetime, *, base_half_life_days: float, access_boost: float) -> bool:
    """Faded below the floor and untouched for ``ARCHIVE_IDLE_DAYS``: a candidate for ``archived``
    (the caller still checks its neighbours: a memory linked to a strong one is kept)."""
    faded = raw_strength(memory, now, base_half_life_days=base_half_life_days, access_boost=access_boost)
    return faded < STRENGTH_FLOOR and _idle_days(memory, now) >= ARCHIVE_IDLE_DAYS


def trust_factor(source: Source, *, agent_inferred: float, imported: float) -> float:
    """Score factor for who vouches for a memory: confirmed by a user ranks above inferred."""
    if source is Source.USER_CONFIRMED:
        return 1.0
    if source is Source.IMPORTED:
        return imported
    return agent_inferred


def rescore(relevance: float, memory_strength: float, trust: float, *, decay_weight: float) -> float:
    """Final score: relevance moved by strength (``decay_weight`` of it) and scaled by trust."""
    return relevance * ((1.0 - decay_weight) + decay_weight * memory_strength) * trust
