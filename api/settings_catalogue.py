"""Every settings class of hivemem: the operator :class:`~hivemem.config.Settings`, then each group of
tuning parameters (:mod:`hivemem.tuning`) from the module that owns it.

For `hivemem config`, the generated settings page and the benchmarks' variants: the one place that
knows them all, on the floor that may import every other.
"""

from __future__ import annotations

from hivemem.admission import AdmissionTuning
from hivemem.limits import Limits
from hivemem.staleness import StalenessTuning
from hivemem.tuning import Tuning
from search.opensearch.tuning import OpenSearchTuning
from search.recall_params import RecallParams
from search.sqlite.tuning import SQLiteTuning
from workers.documents.knowledge_tuning import KnowledgeTuning
from workers.job_tuning import JobTuning
from workers.lifecycle_tuning import LifecycleTuning
from workers.models.embed_tuning import EmbedTuning
from workers.rerank_pool import RerankPoolTuning

__all__ = ["TUNING_GROUPS", "tuning_group_of"]

TUNING_GROUPS: tuple[type[Tuning], ...] = (
    RecallParams,
    StalenessTuning,
    LifecycleTuning,
    KnowledgeTuning,
    Limits,
    EmbedTuning,
    AdmissionTuning,
    RerankPoolTuning,
    JobTuning,
    SQLiteTuning,
    OpenSearchTuning,
)


def tuning_group_of(name: str) -> type[Tuning] | None:
    """The group that owns the tuning parameter ``name`` (lower case, no prefix), or None."""
    return next((group for group in TUNING_GROUPS if name in group.model_fields), None)
