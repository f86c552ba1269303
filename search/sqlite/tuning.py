"""The tuning of the SQLite store: when a scope's vectors are clustered, how much of a clustered
scope a query reads, whether candidates are rescored exactly, and how long the open-time check runs.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hivemem.tuning import Tuning

__all__ = ["SQLiteTuning"]


class SQLiteTuning(Tuning):
    """The numbers of the SQLite store's vector index and of its open."""

    group_title: ClassVar[str] = "SQLite store"

    vector_cluster_min_rows: int = Field(
        default=20_000,
        ge=1,
        description="SQLite store: a scope of at least this many vectors is split into clusters (k-means, "
        "4·sqrt(n) of them) and a query reads the nearest clusters (approximate; recall@10 >= 0.99 measured); a "
        "smaller scope, or a filter passing no more rows than this or under a tenth of the scope, is scanned "
        "exactly.",
    )
    vector_probe_rows: int = Field(
        default=10_000,
        ge=1,
        description="SQLite store: in a clustered scope, a query reads clusters until it has read at least this "
        "many rows (and `vector_probe_share` of the scope); more rows, better recall, slower.",
    )
    vector_probe_share: float = Field(
        default=0.02,
        gt=0,
        le=1,
        description="SQLite store: in a clustered scope, a query reads at least this share of the scope's rows.",
    )
    vector_rescore: bool = Field(
        default=False,
        description="SQLite store: score recall's vector candidates again from the float32 vectors in the file "
        "(exact cosines, one read of about 125 rows a query) instead of the index's float16 copies (cosines "
        "within ~1e-3; LoCoMo and SciFact rank the same). Write-time resolution always uses exact cosines.",
    )
    sqlite_integrity_check: Literal["quick", "off"] = Field(
        default="quick",
        description="Check a SQLite file when it is opened (`PRAGMA quick_check`) and refuse a damaged one; "
        "`off` skips the check (a damaged file is still refused as soon as a statement meets the damage).",
    )
    sqlite_integrity_check_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Longest the open-time check may take; a larger file opens unchecked after that, with a warning.",
    )
