"""Every settings class of hivemem: the operator :class:`~hivemem.config.Settings`, then each group of
tuning parameters (:mod:`hivemem.tuning`) from the module that owns it.

For `hivemem config`, the generated settings page and the benchmarks' variants: the one place that
knows them all, on the floor that may import every other.
"""

from __future__ import annotations

import os

import pydantic
import pydantic_core

from hivemem.admission import AdmissionTuning
from hivemem.config_file import config_file_path
from hivemem.errors import ConfigError
from hivemem.limits import Limits
from hivemem.staleness import StalenessTuning
from hivemem.tuning import TUNING_TABLE, Tuning, config_table
from search.opensearch.tuning import OpenSearchTuning
from search.recall_params import RecallParams
from search.sqlite.tuning import SQLiteTuning
from workers.documents.knowledge_tuning import KnowledgeTuning
from workers.job_tuning import JobTuning
from workers.lifecycle_tuning import LifecycleTuning
from workers.models.embed_tuning import EmbedTuning
from workers.rerank_pool_tuning import RerankPoolTuning

__all__ = ["TUNING_GROUPS", "refuse_invalid_tuning", "tuning_group_of"]

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


def refuse_invalid_tuning() -> tuple[Tuning, ...]:
    """Raise ``ConfigError`` for a key of the config file's ``[tuning]`` table that is no tuning
    parameter, or for a tuning value, from the environment or that table, that its parameter does
    not take; the error names the variable or the key. Else every group, as built to check it.

    Each group takes only its own keys from the table, so a misspelt one would be ignored without a
    word; and a group is built where it is used, often after the store is open, so a value out of
    bounds would fail a process that had already made an empty database. The processes that serve
    (``serve``, ``mcp``, ``worker``, ``beat``), ``hivemem config`` and every command that opens the
    store (:mod:`api.cli.opened`) call this first, as a misplaced operator key is refused."""
    unknown = sorted(key for key in config_table(TUNING_TABLE) if tuning_group_of(key) is None)
    if unknown:
        raise ConfigError(
            f"config file {config_file_path()}: [{TUNING_TABLE}] {', '.join(unknown)} "
            f"{'is not a tuning parameter' if len(unknown) == 1 else 'are not tuning parameters'} "
            "(docs/settings.md lists them)"
        )
    built: list[Tuning] = []
    refused: list[str] = []
    for group in TUNING_GROUPS:
        try:
            built.append(group())
        except pydantic.ValidationError as exc:
            refused.extend(_refusal(group, error) for error in exc.errors())
    if refused:
        raise ConfigError("; ".join(refused))
    return tuple(built)


def _refusal(group: type[Tuning], error: pydantic_core.ErrorDetails) -> str:
    """One refused tuning value, said with where it came from: the variable, which wins, or the key.
    A check across parameters (chunk overlap below chunk length) names them in its message, and
    either source may have set them: it is said under its group's title."""
    if not error["loc"]:
        return f"{group.group_title} tuning: {error['msg']}"
    name = str(error["loc"][0])
    variable = f"HIVEMEM_{name.upper()}"
    if any(key.upper() == variable for key in os.environ):
        return f"{variable}: {error['msg']}"
    return f"config file {config_file_path()}: [{TUNING_TABLE}] {name}: {error['msg']}"
