"""Settings: one object, read from ``HIVEMEM_*`` environment variables and an optional TOML file.

Precedence, highest first: explicit arguments, environment, the TOML file named by
``HIVEMEM_CONFIG`` (default ``~/.config/hivemem/config.toml``; keys are the field names without
the prefix), then the defaults below. Every field has a description; ``tests/test_docs.py`` fails
when one is missing from the README.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from hivemem.model import FusionMethod

__all__ = ["LOOPBACK_HOSTS", "Settings", "config_file_path", "default_data_dir"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


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
        description="Where memories live. `sqlite:///PATH` (default: `DATA_DIR/hivemem.db`) or `sqlite://:memory:`.",
    )
    broker_url: str = Field(
        default="",
        description="Job broker. Empty runs jobs in-process (the embedded shape, the only one available so "
        "far); a `redis://` URL is refused until the Celery workers land.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Folder for the embedded database and caches.",
    )
    embed_model: str = Field(
        default="",
        description="Embedding model: a local folder or a hub id. Empty loads the packaged all-MiniLM-L6-v2.",
    )
    embed_device: str = Field(default="cpu", description="Torch device for the embedder: `cpu` or `cuda`.")
    embed_batch_size: int = Field(default=32, ge=1, le=1024, description="Texts per embedder batch.")
    embed_max_length: int = Field(default=256, ge=8, le=8192, description="Tokens kept per text.")
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
    rrf_k: int = Field(default=60, ge=1, description="Rank constant of reciprocal-rank fusion.")
    candidates_per_leg: int = Field(
        default=100, ge=1, le=1000, description="Candidates each leg (BM25, vector) brings to fusion."
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
        description="Strength gained per ln(1 + accesses): recalled memories fade slower.",
    )
    trust_agent_inferred: float = Field(
        default=0.9, ge=0.0, le=1.0, description="Score factor for `agent_inferred` memories."
    )
    trust_imported: float = Field(default=0.95, ge=0.0, le=1.0, description="Score factor for `imported` memories.")
    default_limit: int = Field(default=10, ge=1, le=100, description="Results recall returns when not told.")
    host: str = Field(default="127.0.0.1", description="Address `hivemem serve` binds.")
    allow_unauthenticated_network: bool = Field(
        default=False,
        description="Allow `serve` on a non-loopback address. There are no tokens yet, so anyone who can "
        "reach the port can read and write every memory: only for a private network (e.g. a container).",
    )
    port: int = Field(default=8765, ge=1, le=65535, description="Port `hivemem serve` binds.")
    log_level: str = Field(default="info", description="Log level of the server.")

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.broker_url:
            raise ValueError(
                "broker_url: the distributed shape (Celery over Redis) is not available yet; "
                "leave HIVEMEM_BROKER_URL empty to run jobs in-process"
            )
        if not self.allow_unauthenticated_network and self.host not in LOOPBACK_HOSTS:
            raise ValueError(
                f"host: binding {self.host!r} would expose every memory without authentication; bind a "
                "loopback address, or set HIVEMEM_ALLOW_UNAUTHENTICATED_NETWORK=true on a private network"
            )
        return self

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
        """The settings as JSON-able values, for `hivemem config` and diagnostics."""
        return self.model_dump(mode="json")
