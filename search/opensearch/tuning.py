"""The tuning of the OpenSearch store: the HNSW graph, shards and replicas, how hybrid queries are
fused, request timeouts and retries, and the lease of a scope's planned writes.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hivemem.tuning import Tuning

__all__ = ["OpenSearchTuning"]


class OpenSearchTuning(Tuning):
    """The numbers of the OpenSearch store's indexes, queries and requests."""

    group_title: ClassVar[str] = "OpenSearch store"

    opensearch_knn_engine: Literal["lucene", "faiss"] = Field(
        default="lucene",
        description="k-NN engine of the HNSW graph. `lucene` filters inside the graph walk and falls back to "
        "exact search for small scopes; `faiss` scales further (quantization) at the cost of native memory.",
    )
    opensearch_space_type: Literal["cosinesimil", "innerproduct", "l2"] = Field(
        default="cosinesimil",
        description="k-NN space type; scores are converted back to cosine, so fusion sees the same scale as SQLite.",
    )
    opensearch_hnsw_m: int = Field(default=16, ge=2, le=512, description="HNSW `m`: links per node.")
    opensearch_ef_construction: int = Field(
        default=128, ge=2, le=4096, description="HNSW `ef_construction`: candidate list size while indexing."
    )
    opensearch_ef_search: int = Field(
        default=100, ge=1, le=10000, description="HNSW `ef_search` (raised to `k` when smaller) for each query."
    )
    opensearch_shards: int = Field(default=1, ge=1, le=1024, description="Primary shards of each new index.")
    opensearch_replicas: int = Field(default=1, ge=0, le=32, description="Replicas of each new index.")
    opensearch_refresh_interval_ms: int = Field(
        default=1000,
        ge=10,
        le=60000,
        description="`index.refresh_interval` of each new index. A single write waits for the next refresh "
        "(`refresh=wait_for`) so that it is recalled when it returns: this is also the longest such wait.",
    )
    opensearch_hybrid: Literal["core", "native"] = Field(
        default="core",
        description="How recall fuses BM25 and k-NN on OpenSearch: `core` (both legs in one `_msearch`, fused by "
        "hivemem exactly as on SQLite) or `native` (a `hybrid` query with the search pipeline that "
        "`hivemem opensearch setup` creates).",
    )
    opensearch_timeout_s: float = Field(default=10.0, gt=0, le=600, description="Timeout of one OpenSearch request.")
    opensearch_max_retries: int = Field(
        default=3, ge=0, le=20, description="Retries of an OpenSearch request on connection errors and timeouts."
    )
    resolve_lock_timeout_s: int = Field(
        default=60,
        ge=1,
        description="How long a writer waits for a scope's resolve lock (Redis) or its OpenSearch lease before the "
        "job is retried later. Both are leases their holder renews (Redis: 5 s; OpenSearch: 15 s, read on "
        "the hosts' clocks), so a writer killed while holding one blocks its scope for seconds, not this long.",
    )
