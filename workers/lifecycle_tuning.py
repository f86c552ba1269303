"""The tuning of the memory lifecycle: how a new memory is resolved against its nearest ones
(reinforce, supersede, keep apart), and which memories a sleep pass consolidates.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from hivemem.cosine_bands import MINILM_BANDS, CosineBands, bands_for, is_measured
from hivemem.tuning import Tuning

__all__ = ["LifecycleTuning"]


def _band(description: str) -> Any:
    """A cosine band's field: unset, the embedding model's own (:mod:`hivemem.cosine_bands`)."""
    return Field(default=None, ge=0.0, le=1.0, description=description)


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
    resolution_reinforce_cosine: float | None = _band(
        "Cosine at which a new memory reinforces its nearest one (default: the embedding model's "
        "same-fact band, hivemem.cosine_bands; 0.85 for all-MiniLM-L6-v2).",
    )
    resolution_contradiction_cosine: float | None = _band(
        "Cosine from which the contradiction check decides between supersede and merge (default: "
        "the model's same-subject band; 0.60 for all-MiniLM-L6-v2).",
    )
    resolution_link_cosine: float | None = _band(
        "Cosine from which a new memory is linked `similar` to a neighbour (default: the model's "
        "related band; 0.40 for all-MiniLM-L6-v2).",
    )
    sleep_threshold: float | None = _band(
        "Cosine to a cluster's seed at which a memory joins it (default: the model's same-fact "
        "band; 0.85 for all-MiniLM-L6-v2).",
    )
    sleep_min_size: int = Field(default=3, ge=2, le=100, description="Memories a cluster needs to be consolidated.")
    sleep_window_days: float = Field(
        default=7.0, gt=0.0, description="How far back sleep looks for working memories to consolidate."
    )

    @model_validator(mode="after")
    def _ordered(self) -> LifecycleTuning:
        both = (self.resolution_contradiction_cosine, self.resolution_reinforce_cosine)
        if both[0] is not None and both[1] is not None and both[0] > both[1]:
            raise ValueError(
                f"resolution_contradiction_cosine ({both[0]}) must not be above resolution_reinforce_cosine ({both[1]})"
            )
        return self

    def bands(self, model_id: str) -> CosineBands:
        """The cosine bands write-time resolution and sleep use with the model ``model_id``: its own
        (:func:`hivemem.cosine_bands.bands_for`), with any set here in their place."""
        own = bands_for(model_id)
        same_fact = _either(self.resolution_reinforce_cosine, own.same_fact)
        same_subject = min(_either(self.resolution_contradiction_cosine, own.same_subject), same_fact)
        related = min(_either(self.resolution_link_cosine, own.related), same_subject)
        return CosineBands(same_fact, same_subject, related, min(own.named_change, same_subject), own.query_related)

    def borrowed_bands_warning(self, model_id: str) -> str | None:
        """What an operator should know when ``model_id``'s cosines are read against bands measured
        for another model: MiniLM's, none of the resolution cosines being set here. Such bands may
        reinforce distinct facts into one (a model whose unrelated notes score 0.8) or keep every
        duplicate apart; nothing is lost either way (a merge keeps both texts), but recall drifts."""
        chosen = (self.resolution_reinforce_cosine, self.resolution_contradiction_cosine, self.resolution_link_cosine)
        if is_measured(model_id) or any(c is not None for c in chosen):
            return None
        return (
            f"the embedding model {model_id} has no measured cosine bands, so deduplication reads "
            f"all-MiniLM-L6-v2's ({MINILM_BANDS.same_fact:.2f} same fact, {MINILM_BANDS.same_subject:.2f} same "
            f"subject, {MINILM_BANDS.related:.2f} related); measure its own with "
            f"`hivemem bench cosine-bands --model {model_id}` and set HIVEMEM_RESOLUTION_REINFORCE_COSINE, "
            f"HIVEMEM_RESOLUTION_CONTRADICTION_COSINE and HIVEMEM_RESOLUTION_LINK_COSINE (docs/recall.md)"
        )

    def sleep_cosine(self, model_id: str) -> float:
        """The cosine to a cluster's seed at which a memory joins it, with the model ``model_id``."""
        return _either(self.sleep_threshold, bands_for(model_id).same_fact)


def _either(chosen: float | None, default: float) -> float:
    return default if chosen is None else chosen
