"""Settings: one object, read from ``HIVEMEM_*`` environment variables and an optional TOML file.

Precedence, highest first: explicit arguments, environment, the TOML file named by
``HIVEMEM_CONFIG`` (default ``~/.config/hivemem/config.toml``; keys are the field names without
the prefix), then the defaults below. Every field has a description; ``tests/test_docs.py`` fails
when one is missing from the README.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from hivemem.limits import DEFAULT_LIMITS, Limits
from hivemem.model import FusionMethod
from hivemem.rerank import RerankGate

__all__ = [
    "BROKER_SCHEMES",
    "LOOPBACK_HOSTS",
    "WILDCARD_HOSTS",
    "Settings",
    "config_file_path",
    "default_cache_dir",
    "default_data_dir",
    "redact_url",
    "store_fingerprint",
]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::")
BROKER_SCHEMES = ("redis", "rediss")
# A host name, an IPv4 address or a bracket-less IPv6 address, optionally `*.` for every subdomain.
_HOST_NAME = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9\-.]*[a-z0-9])?|[0-9a-f:.]+")
_ORIGIN = re.compile(r"https?://[a-z0-9\-.\[\]:]+")
MiB = 1024 * 1024

# A list setting: a comma list in the environment (`a.example,b.example`), a list in the TOML file.
CommaList = Annotated[tuple[str, ...], NoDecode]


def _comma_list(value: object) -> object:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``: safe for logs and banners."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def store_fingerprint(store_url: str) -> str:
    """A store's public name (``/healthz``): enough to tell two stores apart, nothing of the URL."""
    return hashlib.sha256(store_url.encode("utf-8")).hexdigest()[:16]


def default_cache_dir() -> Path:
    """Where derived model files are cached: ``$XDG_CACHE_HOME/hivemem`` or ``~/.cache/hivemem``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hivemem"


def default_data_dir() -> Path:
    """Where the embedded shape keeps its database: ``$XDG_DATA_HOME/hivemem`` or ``~/.local/share/hivemem``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hivemem"


def config_file_path() -> Path:
    """The TOML config file: ``HIVEMEM_CONFIG``, else ``~/.config/hivemem/config.toml``."""
    explicit = os.environ.get("HIVEMEM_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hivemem" / "config.toml"


class Settings(BaseSettings):
    """Every knob of hivemem. Numbers in the design are defaults; each one is a field here."""

    model_config = SettingsConfigDict(env_prefix="HIVEMEM_", extra="forbid", frozen=True)

    store_url: str = Field(
        default="",
        description="Where memories live. `sqlite:///PATH` (default: `DATA_DIR/hivemem.db`), `sqlite://:memory:`, "
        "or an OpenSearch cluster: `opensearch+http://HOST:9200`, `opensearch+https://USER:PASS@HOST:9200` "
        "(optional `?index=PREFIX`).",
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
    vector_rescore: bool = Field(
        default=False,
        description="SQLite store: score recall's vector candidates again from the float32 vectors in the file "
        "(exact cosines, one read of about 125 rows a query) instead of the index's float16 copies (cosines "
        "within ~1e-3; LoCoMo and SciFact rank the same). Write-time resolution always uses exact cosines.",
    )
    vector_probe_share: float = Field(
        default=0.02,
        gt=0,
        le=1,
        description="SQLite store: in a clustered scope, a query reads at least this share of the scope's rows.",
    )
    # -- OpenSearch store (read only when store_url is an opensearch+http(s) URL) --
    opensearch_index: str = Field(
        default="hivemem",
        pattern=r"^[a-z0-9][a-z0-9_\-]{0,150}$",
        description="Name prefix of the OpenSearch aliases (`PREFIX`, `PREFIX-relations`, …); the URL's "
        "`?index=` wins. Each alias points at a versioned index (`PREFIX-v1`), so a mapping change is a reindex.",
    )
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
    opensearch_hybrid: Literal["core", "native"] = Field(
        default="core",
        description="How recall fuses BM25 and k-NN on OpenSearch: `core` (both legs in one `_msearch`, fused by "
        "hivemem exactly as on SQLite) or `native` (a `hybrid` query with the search pipeline that "
        "`hivemem opensearch setup` creates).",
    )
    opensearch_verify_certs: bool = Field(default=True, description="Verify the cluster's TLS certificate.")
    opensearch_ca_certs: Path | None = Field(
        default=None, description="CA bundle (PEM) that signed the cluster's certificate; empty uses the system's."
    )
    opensearch_timeout_s: float = Field(default=10.0, gt=0, le=600, description="Timeout of one OpenSearch request.")
    opensearch_max_retries: int = Field(
        default=3, ge=0, le=20, description="Retries of an OpenSearch request on connection errors and timeouts."
    )
    broker_url: str = Field(
        default="",
        description="Job broker and result backend. Empty runs jobs in-process (the embedded shape); "
        "`redis://[:PASSWORD@]HOST:PORT/DB` (or `rediss://`) queues them for Celery workers (`hivemem worker`).",
    )
    memorize_wait_s: float = Field(
        default=2.0,
        ge=0.0,
        le=60.0,
        description="With a broker: how long `memorize` waits for its job before answering 202 with the job id.",
    )
    job_retries: int = Field(
        default=5, ge=0, le=100, description="Retries of a job whose store is unreachable, with exponential backoff."
    )
    job_retry_backoff_max_s: int = Field(
        default=60, ge=1, le=3600, description="Longest wait between two retries of a job."
    )
    job_ttl_s: int = Field(
        default=7 * 24 * 3600,
        ge=60,
        description="How long job records and dead letters are kept in the broker after their last change.",
    )
    broker_visibility_timeout_s: int = Field(
        default=3600,
        ge=1,
        description="Seconds before a job taken by a worker that died is handed to another worker. Longer than "
        "the slowest job, or a slow job runs twice (harmless: jobs are idempotent, but wasteful).",
    )
    job_republish_limit: int = Field(
        default=3,
        ge=0,
        le=100,
        description="How often a job whose broker message was lost is queued again before it fails with a dead letter.",
    )
    reconcile_interval_s: int = Field(
        default=60,
        ge=1,
        le=86_400,
        description="How often beat looks for accepted jobs whose broker message was lost (each worker also "
        "looks once at start-up); a job counts as lost once it is older than the visibility timeout.",
    )
    resolve_lock_timeout_s: int = Field(
        default=60,
        ge=1,
        description="Lifetime of a scope's resolve lock (Redis) and of its OpenSearch lease for planned writes: a "
        "worker killed while holding one blocks its scope no longer. Also how long a writer waits for either.",
    )
    embed_batch_window_ms: int = Field(
        default=5,
        ge=0,
        le=1000,
        description="With a broker: memorize calls arriving within this window are embedded as one batch.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Folder for the embedded database and caches.",
    )
    model_cache_dir: Path = Field(
        default_factory=default_cache_dir,
        description="Folder for model files hivemem derives from a model: its ONNX copy for `embed_runtime` onnx "
        "(made once per model; copies of one model, in any data dir, share it).",
    )
    embed_model: str = Field(
        default="",
        description="Embedding model: a local folder or a hub id. Empty loads the packaged all-MiniLM-L6-v2; "
        "the hub id of a model hivemem carries as a package loads the installed package's copy.",
    )
    reembed_on_model_change: bool = Field(
        default=True,
        description="When the store holds another model's vectors: serve them with that model and re-embed "
        "everything with `embed_model` in the background (SQLite). False: refuse to start instead.",
    )
    embed_device: str = Field(
        default="cpu",
        pattern=r"^(cpu|cuda(:\d{1,2})?)$",
        description="Torch device for the embedder and the reranker: `cpu`, `cuda`, or `cuda:N` (the Nth GPU).",
    )
    embed_batch_size: int = Field(default=32, ge=1, le=1024, description="Texts per embedder batch.")
    embed_threads: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Threads per model call for embedding (torch's threads per process; onnxruntime's per call); "
        "0 is the runtime's default (torch: one per core; onnx: one). "
        "`hivemem worker` sets cores / concurrency when this is 0.",
    )
    embed_runtime: Literal["auto", "onnx", "torch"] = Field(
        default="auto",
        description="What runs the embedding model: `onnx` (onnxruntime on the CPU, on an ONNX copy of the model "
        "folder exported once under the data dir; the same vectors, about twice as fast as torch, one call per "
        "core at once), `torch`, or `auto` (onnx on a CPU for a model folder when onnxruntime is installed, "
        "else torch; a failed export falls back to torch with a warning).",
    )
    embed_weights: Literal["int8", "float32"] = Field(
        default="float32",
        description="The weights the onnx runtime computes with: `float32` (the model's own vectors) or `int8` "
        "(an 8-bit copy of the ONNX model, made once beside it: weights in blocks of 32, multiplied in int8; "
        "vectors within cosine 0.998 of the model's; all-mpnet-base-v2 recalls in three quarters of the time "
        "and embeds about 1.5x as fast, MiniLM gains 10-30 %; where the copy cannot be made, float32 with a "
        "warning). torch ignores it.",
    )
    embed_parallel: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Model calls run at once in one process (the embedded shape's model threads); 0 lets the "
        "runtime say: one per core for onnx, one for torch, whose own threads already take every core.",
    )
    embed_max_length: int = Field(
        default=256, ge=8, le=8192, description="Tokens of a memory or a query the embedder reads."
    )
    query_prefix: str = Field(default="", description="Prepended to recall queries (e5 models: `query: `).")
    passage_prefix: str = Field(
        default="", description="Prepended to stored texts before embedding (e5 models: `passage: `)."
    )
    fusion: FusionMethod = Field(
        default=FusionMethod.MINMAX,
        description="How the BM25 and vector legs are fused: `minmax` (normalise, weighted sum) or `rrf`.",
    )
    bm25_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the BM25 leg in min-max fusion; vectors get 1 - w.",
    )
    bm25_half_score: float = Field(
        default=5.5,
        ge=0.0,
        description="In min-max fusion, a BM25 leg that ran out of documents (a small scope) is read on its own "
        "scale, s / (s + h), not min-max over its few candidates: h is the BM25 score worth half, in Lucene's "
        "units (SQLite's FTS5 scores are 2.2 times them). 0: min-max always.",
    )
    rrf_k: int = Field(default=60, ge=1, description="Rank constant of reciprocal-rank fusion.")
    candidates_per_leg: int = Field(
        default=100, ge=1, le=1000, description="Candidates each leg (BM25, vector) brings to fusion."
    )
    second_embed_model: str = Field(
        default="",
        description="A second embedding model (as `HIVEMEM_EMBED_MODEL` names one, e.g. `e5-small`) whose cosine "
        "is one more leg of recall over the candidates the other legs bring; its vectors of every memory are kept "
        "beside the first model's and filled in the background (SQLite store). Empty: off.",
    )
    second_dense_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="The second model's share of the vector legs' fusion weight (`1 - HIVEMEM_BM25_WEIGHT`); the "
        "first model keeps the rest.",
    )
    context_window: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Neighbours on each side of a memory in its thread that the context leg reads with it; 0 turns "
        "the leg off. Memories in no thread are recalled as without it.",
    )
    context_weight: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="Fusion weight of the context leg when a candidate has thread neighbours; the other legs share "
        "the rest as `HIVEMEM_BM25_WEIGHT` splits it.",
    )
    context_neighbour_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=10.0,
        description="In the context leg, the share of an adjacent turn's BM25 score a memory gets (halved per step).",
    )
    thread_weight: float = Field(
        default=0.4,
        ge=0.0,
        le=5.0,
        description="How much the best score among a memory's thread-mates on the shortlist counts in its own: "
        "(own + w × best) / (1 + w), lifting the other turns of the conversation a question matches best. The best "
        "result keeps its score, and so does every memory in no thread. 0: off.",
    )
    query_expansion: Literal["off", "prf"] = Field(
        default="off",
        description="`prf`: pseudo-relevance feedback on the vector leg (the query vector plus the centroid of "
        "the first pass's best `HIVEMEM_PRF_DOCS`, searched again); `off`: one pass.",
    )
    prf_docs: int = Field(default=3, ge=1, le=20, description="First-pass hits whose centroid expands the query.")
    prf_weight: float = Field(
        default=0.5, ge=0.0, le=2.0, description="Weight of that centroid next to the query vector (Rocchio's beta)."
    )
    time_boost: float = Field(
        default=0.25,
        ge=0.0,
        le=5.0,
        description="When a question names a date (a day, a month, a year), multiply the score of a memory whose "
        "date fits by 1 + this (its dates: those written in its text, else its creation day). 0: off.",
    )
    search_concurrency: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Searches (recalls and knowledge searches) run at once in one process; the others wait their "
        "turn in arrival order. 0: one more than the cores with the SQLite store (about half again as many recalls "
        "per second under load as letting every request in), no limit with OpenSearch (searches wait on the cluster).",
    )
    rerank_model: str = Field(
        default="",
        description="The rerank stage's model: `cross:PATH_OR_ID` (a cross-encoder), `bi:MODEL` (a second "
        "embedder's cosine, e.g. `bi:e5-small`) or `e5-small`; empty turns the stage off.",
    )
    rerank_gate: RerankGate = Field(
        default=RerankGate.ALWAYS,
        description="When a configured reranker runs: `always`, `never`, or `margin` (only when the first "
        "stage's best two candidates are within `HIVEMEM_RERANK_MARGIN`).",
    )
    rerank_top_n: int = Field(default=30, ge=2, le=200, description="First-stage candidates the reranker reads.")
    rerank_margin: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="The `margin` gate: rerank when the best two fused scores differ by less.",
    )
    rerank_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the reranker's (min-max normalised) score in the reranked order; the rest is the "
        "first stage's.",
    )
    rerank_pool: bool = Field(
        default=False,
        description="Send reranking to the `rerank` queue (workers started with `--queues rerank`, on GPU with "
        "`--device cuda`) instead of scoring in the serving process; needs `HIVEMEM_BROKER_URL`.",
    )
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
    decay_half_life_days: float = Field(
        default=90.0, gt=0, description="Base half-life of a memory's strength; scaled per memory type."
    )
    decay_weight: float = Field(
        default=0.3, ge=0.0, le=1.0, description="How much decayed strength moves the final score (0 = none)."
    )
    access_boost: float = Field(
        default=0.1,
        ge=0.0,
        description="Strength gained per ln(1 + uses): memories read by id, cited or repeated fade slower "
        "(recalls do not count).",
    )
    trust_agent_inferred: float = Field(
        default=0.9, ge=0.0, le=1.0, description="Score factor for `agent_inferred` memories."
    )
    trust_imported: float = Field(default=0.95, ge=0.0, le=1.0, description="Score factor for `imported` memories.")
    superseded_factor: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Recall score factor of a memory that is no longer valid (superseded: `valid_to` passed).",
    )
    consolidated_factor: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Recall score factor of a consolidated source: found, ranked below the memory that holds it.",
    )
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
    sleep_interval_hours: float = Field(
        default=24.0,
        ge=0.0,
        description="How often each scope is sleep-consolidated (clusters of recent near-identical working "
        "memories become one insight); 0 turns the pass off. Embedded: at start-up and on a timer.",
    )
    sleep_threshold: float = Field(
        default=0.85, ge=0.0, le=1.0, description="Cosine to a cluster's seed at which a memory joins it."
    )
    sleep_min_size: int = Field(default=3, ge=2, le=100, description="Memories a cluster needs to be consolidated.")
    sleep_window_days: float = Field(
        default=7.0, gt=0.0, description="How far back sleep looks for working memories to consolidate."
    )
    default_limit: int = Field(default=10, ge=1, le=100, description="Results recall returns when not told.")
    host: str = Field(default="127.0.0.1", description="Address `hivemem serve` binds.")
    allow_unauthenticated_network: bool = Field(
        default=False,
        description="Allow `serve` on a non-loopback address without `HIVEMEM_TEAM`: until a token is created, "
        "anyone who can reach the port reads and writes every memory. Only for a private network (e.g. a container).",
    )
    team: bool = Field(
        default=False,
        description="Serve as a team server: every HTTP request needs a bearer token (`hivemem token create`), "
        "and the first start creates an admin token and prints it once. Allows a non-loopback bind.",
    )
    trust_loopback: bool = Field(
        default=False,
        description="Let requests from a loopback address in without a token even once tokens exist (a "
        "single-user laptop). Off by default: a token, once created, is needed by every HTTP request.",
    )
    token_secret: str = Field(
        default="",
        description="The key tokens are hashed with (HMAC-SHA256). Empty: a random key kept in `token.key` in "
        "the data folder. Set the same value on every gateway of one store.",
        repr=False,
    )
    rate_limit_per_min: int = Field(
        default=1200,
        ge=0,
        le=1_000_000,
        description="Requests one token may make per minute (429 past it); 0: no limit.",
    )
    auth_failures_per_min: int = Field(
        default=20,
        ge=1,
        le=100_000,
        description="Requests with a bad token one client address may make per minute before every request "
        "of that address is refused (429) for the rest of the minute.",
    )
    allowed_hosts: CommaList = Field(
        default=(),
        description="Host names (comma list; `*.example.com` for subdomains) that requests may name in their "
        "`Host` header, besides the bind address and the loopback names. Every other host is refused (421), "
        "which stops DNS rebinding. Required for a non-loopback bind.",
    )
    trusted_proxies: CommaList = Field(
        default=(),
        description="Addresses or networks (comma list, e.g. `127.0.0.1,10.0.0.0/8`) of the reverse proxies whose "
        "`X-Forwarded-For` and `X-Forwarded-Proto` headers name the real client. Empty: every forwarded header is "
        "ignored, so no client picks the address it is throttled, locked out and audited under.",
    )
    cors_origins: CommaList = Field(
        default=(),
        description="Browser origins (comma list of `scheme://host[:port]`) allowed to call the API cross-origin. "
        "A request with any other `Origin` is refused (403), same-origin requests excepted.",
    )
    server_url: str = Field(
        default="",
        # `HIVEMEM_URL` is the short name: a client's usual way of naming its server.
        validation_alias=AliasChoices("server_url", "HIVEMEM_SERVER_URL", "HIVEMEM_URL"),
        description="The running server the CLI sends memorize, remember, get and forget to. Empty: the local "
        "`hivemem serve` on `port` when it answers for the same store; `off`: the CLI always works alone.",
    )
    token: str = Field(
        default="",
        description="The bearer token the CLI sends to that server (a team server's, or once tokens exist).",
    )
    otel_endpoint: str = Field(
        default="",
        max_length=500,
        description="Send traces over OTLP/HTTP to this collector (e.g. `http://127.0.0.1:4318`; needs the `otel` "
        "extra): gateway requests, Celery publish and run, embedding, store writes, recall stages. Empty (the "
        "default): no traces.",
    )
    metrics: bool = Field(
        default=True,
        description="Serve Prometheus metrics at `/metrics` (pulled by a scraper, with a token where tokens are "
        "needed; nothing is ever sent).",
    )
    max_request_bytes: int = Field(
        default=1 * MiB, ge=1024, le=256 * MiB, description="Largest request body; a larger one is refused (413)."
    )
    max_bulk_request_bytes: int = Field(
        default=8 * MiB,
        ge=1024,
        le=1024 * MiB,
        description="Largest body of `POST /v1/memories/bulk` and `POST /v1/import`; split larger imports "
        "into several calls (or run `hivemem import` on the server's machine).",
    )
    max_tags: int = Field(
        default=DEFAULT_LIMITS.max_tags, ge=0, le=1000, description="Most tags one memory (or one recall filter) has."
    )
    max_related_files: int = Field(
        default=DEFAULT_LIMITS.max_related_files, ge=0, le=10_000, description="Most `related_files` one memory has."
    )
    max_details_bytes: int = Field(
        default=DEFAULT_LIMITS.max_details_bytes,
        ge=2,
        le=16 * MiB,
        description="Largest `details` object of a memory, in bytes of JSON.",
    )
    max_details_depth: int = Field(
        default=DEFAULT_LIMITS.max_details_depth,
        ge=1,
        le=100,
        description="Deepest nesting of a memory's `details` (an object of scalars is 1).",
    )
    # -- knowledge (documents) --
    knowledge_chunk_chars: int = Field(
        default=1200, ge=100, le=20_000, description="Target length of a document chunk, in characters."
    )
    knowledge_chunk_overlap: int = Field(
        default=300, ge=0, le=10_000, description="Characters a long section's consecutive chunks share."
    )
    knowledge_embed_max_length: int = Field(
        default=512,
        ge=8,
        le=8192,
        description="Tokens of a document chunk the embedder reads (capped by the model's own window); "
        "a 1,200-character chunk runs to about 300 tokens, past a memory's 256.",
    )
    knowledge_max_document_bytes: int = Field(
        default=50 * MiB, ge=1, le=4096 * MiB, description="Largest document (file, upload or URL) hivemem indexes."
    )
    knowledge_max_chunks: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Most chunks one document may make (about 9 MB of prose, a 3,000-page book, at the default "
        "chunk size); a document over it is refused with that reason, so no upload of tiny sections makes "
        "tens of thousands of embeddings.",
    )
    knowledge_max_inflated_bytes: int = Field(
        default=200 * MiB,
        ge=1,
        le=16384 * MiB,
        description="Most bytes the parts of a .docx (a zip) may inflate to; more is refused as a zip bomb.",
    )
    knowledge_allowed_paths: CommaList = Field(
        default=(),
        description="Folders (comma list) whose files clients over HTTP (REST, MCP) may have indexed by path. "
        "Empty: none; such clients upload documents instead. Over stdio the agent's own files are read.",
    )
    knowledge_allow_private_urls: bool = Field(
        default=False,
        description="Fetch URLs whose host resolves to a private, loopback or reserved address (an internal wiki). "
        "Off: such URLs are refused, so that the server cannot be used to reach its own network.",
    )
    knowledge_url_timeout_s: float = Field(default=20.0, gt=0, le=600, description="Longest fetch of one URL.")
    knowledge_url_max_age_s: float = Field(
        default=86_400.0, ge=0, description="Age after which an indexed URL is fetched again by `knowledge search`."
    )
    knowledge_match_max_results: int = Field(
        default=100, ge=1, le=10_000, description="Most chunks one `knowledge match` returns."
    )
    knowledge_match_budget_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="Longest one `knowledge match` may scan before it answers with what it found.",
    )
    knowledge_read_chars: int = Field(
        default=20_000, ge=100, le=10_000_000, description="Characters `knowledge read` returns per page when not told."
    )
    port: int = Field(default=8765, ge=1, le=65535, description="Port `hivemem serve` binds.")
    log_level: str = Field(default="info", description="Log level of the server.")

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.broker_url and self.broker_url.split(":", 1)[0].lower() not in BROKER_SCHEMES:
            raise ValueError(
                f"broker_url: {self.broker_url.split(':', 1)[0]!r} is not a supported broker; use "
                "redis://HOST:PORT/DB (or rediss://), or leave it empty to run jobs in-process"
            )
        if self.host not in LOOPBACK_HOSTS:
            if not (self.team or self.allow_unauthenticated_network):
                raise ValueError(
                    f"host: binding {self.host!r} would expose every memory without authentication; bind a "
                    "loopback address, serve as a team server with tokens (HIVEMEM_TEAM=true), or set "
                    "HIVEMEM_ALLOW_UNAUTHENTICATED_NETWORK=true on a private network"
                )
            if not self.allowed_hosts:
                raise ValueError(
                    f"allowed_hosts: binding {self.host!r} needs HIVEMEM_ALLOWED_HOSTS, the host names clients "
                    "use to reach this server (e.g. memory.example.com); requests naming any other host are "
                    "refused, so that no web page can reach the server through DNS rebinding"
                )
        if self.rerank_pool and not self.broker_url:
            raise ValueError("rerank_pool: the rerank pool is reached through the broker; set HIVEMEM_BROKER_URL")
        if self.rerank_pool and not self.rerank_model.strip():
            raise ValueError("rerank_pool: no HIVEMEM_RERANK_MODEL to rerank with (the workers load the same one)")
        if self.second_embed_model.strip() and self.second_embed_model.strip() == self.embed_model.strip():
            raise ValueError(
                f"second_embed_model: {self.second_embed_model!r} is already the embedding model; name another "
                "model, or leave it empty"
            )
        if self.resolution_contradiction_cosine > self.resolution_reinforce_cosine:
            raise ValueError(
                f"resolution_contradiction_cosine ({self.resolution_contradiction_cosine}) must not be above "
                f"resolution_reinforce_cosine ({self.resolution_reinforce_cosine})"
            )
        if self.knowledge_chunk_overlap >= self.knowledge_chunk_chars:
            raise ValueError(
                f"knowledge_chunk_overlap ({self.knowledge_chunk_overlap}) must be below knowledge_chunk_chars "
                f"({self.knowledge_chunk_chars})"
            )
        return self

    @field_validator("allowed_hosts", "cors_origins", "knowledge_allowed_paths", "trusted_proxies", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return _comma_list(value)

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        names = tuple(v.lower().rstrip(".").removeprefix("[").removesuffix("]") for v in value)
        bad = [v for v in names if not _HOST_NAME.fullmatch(v)]
        if bad:
            raise ValueError(f"not host names: {bad} (give names such as memory.example.com, without ports)")
        return names

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = []
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                bad.append(entry)
        if bad:
            raise ValueError(f"not addresses or networks: {bad} (give IPs or CIDRs, such as 10.0.0.0/8)")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        origins = tuple(v.lower().rstrip("/") for v in value)
        bad = [v for v in origins if not _ORIGIN.fullmatch(v)]
        if bad:
            raise ValueError(f"not origins: {bad} (give scheme://host[:port], such as https://app.example.com)")
        return origins

    @field_validator("otel_endpoint")
    @classmethod
    def _collector(cls, value: str) -> str:
        endpoint = value.strip().rstrip("/")
        if endpoint and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", endpoint):
            raise ValueError(
                f"not an http(s) URL: {value!r} (give the collector's OTLP/HTTP base, e.g. http://host:4318)"
            )
        return endpoint

    def limits(self) -> Limits:
        """How much one memory may carry, as these settings configure it."""
        return Limits(
            max_tags=self.max_tags,
            max_related_files=self.max_related_files,
            max_details_bytes=self.max_details_bytes,
            max_details_depth=self.max_details_depth,
        )

    def resolved_store_url(self) -> str:
        """The store URL, with the embedded default filled in from ``data_dir``."""
        return self.store_url or f"sqlite:///{self.data_dir.expanduser() / 'hivemem.db'}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file_path())
        return (init_settings, env_settings, toml)

    def public_dict(self) -> dict[str, Any]:
        """The settings as JSON-able values, for `hivemem config` and diagnostics; passwords in URLs redacted."""
        values = self.model_dump(mode="json")
        for name in ("store_url", "broker_url", "otel_endpoint"):
            values[name] = redact_url(values[name])
        return values
