"""The tuning of the rerank pool's gateway side (:mod:`workers.rerank_pool`).

Apart from the pool so that every tuning group imports with hivemem's base install: the settings
page, ``hivemem config`` and the ``[tuning]`` check read it where Celery is not installed.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from hivemem.tuning import Tuning

__all__ = ["RerankPoolTuning"]


class RerankPoolTuning(Tuning):
    """How long recall waits for the rerank pool, and how long it skips a pool that failed."""

    group_title: ClassVar[str] = "Rerank pool"

    rerank_deadline_ms: int = Field(
        default=1500,
        ge=1,
        le=60_000,
        description="How long recall waits for the rerank pool; later, it answers in first-stage order.",
    )
    rerank_pool_cooldown_s: float = Field(
        default=30.0,
        ge=0.0,
        le=3600.0,
        description="After the pool failed or was late, how long recall skips it (first-stage order at once).",
    )
