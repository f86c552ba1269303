from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from hivemem.config import Settings
from hivemem.model import FusionMethod


def test_defaults_point_at_the_embedded_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    settings = Settings()
    assert settings.data_dir == tmp_path / "hivemem"
    assert settings.resolved_store_url() == f"sqlite:///{tmp_path / 'hivemem' / 'hivemem.db'}"
    assert settings.broker_url == ""
    assert settings.fusion is FusionMethod.MINMAX
    assert settings.bm25_weight == 0.5


def test_environment_overrides_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "hivemem.toml"
    config.write_text('fusion = "rrf"\nrrf_k = 30\nport = 9000\n')
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    monkeypatch.setenv("HIVEMEM_PORT", "9100")
    settings = Settings()
    assert settings.fusion is FusionMethod.RRF
    assert settings.rrf_k == 30
    assert settings.port == 9100


def test_bad_values_are_refused_with_the_field_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_BM25_WEIGHT", "1.5")
    with pytest.raises(pydantic.ValidationError, match="bm25_weight"):
        Settings()


def test_unknown_keys_in_toml_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "hivemem.toml"
    config.write_text("no_such_setting = 1\n")
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    with pytest.raises(pydantic.ValidationError, match="no_such_setting"):
        Settings()


def test_non_loopback_bind_needs_an_explicit_opt_in() -> None:
    with pytest.raises(pydantic.ValidationError, match="without authentication"):
        Settings(host="0.0.0.0")
    assert Settings(host="0.0.0.0", allow_unauthenticated_network=True).host == "0.0.0.0"
    assert Settings(host="::1").host == "::1"


def test_only_redis_brokers_are_accepted() -> None:
    assert Settings(broker_url="redis://localhost:6379/0").broker_url == "redis://localhost:6379/0"
    assert Settings(broker_url="rediss://:pw@cache:6380/1").broker_url.startswith("rediss://")
    for url in ("amqp://guest@localhost//", "localhost:6379", "sqs://"):
        with pytest.raises(pydantic.ValidationError, match="not a supported broker"):
            Settings(broker_url=url)
