"""The tuning of the memory lifecycle: how a new memory is resolved against its nearest ones
(reinforce, supersede, keep apart), and which memories a sleep pass consolidates.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from hivemem.tuning import Tuning

__all__ = ["LifecycleTuning"]


class LifecycleTuning(Tuning):
    """The numbers of write-time resolution and of sleep consolidation."""

    group_title: ClassVar[str] = "Memory lifecycle"

    resolution_neighbours: int = Field(
        default=5,
        ge=0,
        le=50,
        description="Nearest memories of its scope a new memory is resolved against (reinforce, merge, "
        "supersede); 0 resolves exact duplicates only. On OpenSearch they come from the k-NN query, under a "
        "per-scope lease.",
    )
    resolution_reinforce_cosine: float = Field(
        default=0.85, ge=0.0, le=1.0, description="Cosine at which a new memory reinforces its nearest one."
    )
    resolution_contradiction_cosine: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="Cosine from which the contradiction check decides between supersede and merge.",
    )
    sleep_threshold: float = Field(
        default=0.85, ge=0.0, le=1.0, description="Cosine to a cluster's seed at which a memory joins it."
    )
    sleep_min_size: int = Field(default=3, ge=2, le=100, description="Memories a cluster needs to be consolidated.")
    sleep_window_days: float = Field(
        default=7.0, gt=0.0, description="How far back sleep looks for working memories to consolidate."
    )

    @model_validator(mode="after")
    def _ordered(self) -> LifecycleTuning:
        if self.resolution_contradiction_cosine > self.resolution_reinforce_cosine:
            raise ValueError(
                f"resolution_contradiction_cosine ({self.resolution_contradiction_cosine}) must not be above "
                f"resolution_reinforce_cosine ({self.resolution_reinforce_cosine})"
            )
        return self
