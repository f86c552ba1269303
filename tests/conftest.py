"""Fixtures shared by every test: a clean environment, settings on a temporary folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from tests.opensearch_backend import opensearch_backend, spec_validator
from tests.services import RedisServer, redis_server_binary

# The OpenSearch fixtures live here only: a session fixture imported into several conftest files is
# one fixture per file, and each of them started a real node of its own (five JVMs in one run).
__all__ = ["opensearch_backend", "spec_validator"]  # fixtures, re-exported for pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--crash-rounds",
        type=int,
        default=3,
        help="how often the crash test kills a worker mid-drain (default 3 for CI; the full run is 20)",
    )
    parser.addoption(
        "--fuzz-examples",
        type=int,
        default=25,
        help="schemathesis examples per API operation and phase (default 25; raise it for a longer fuzz)",
    )
    parser.addoption(
        "--screenshots",
        type=Path,
        default=None,
        help="keep the dashboard tests' screenshots in this folder (default: each test's temporary folder)",
    )
    parser.addoption(
        "--chromium",
        default=None,
        help="the Chromium the dashboard tests drive (default: chromium, chromium-browser or google-chrome on PATH)",
    )
    parser.addoption(
        "--quality",
        action="store_true",
        help="run the LoCoMo quality test: hybrid recall with the real model on the dev conversations, "
        "and each leg alone, which it must beat (about three minutes; skipped by default)",
    )
    parser.addoption(
        "--wheel",
        action="store_true",
        help="also install the built wheel with the embed extra into a fresh environment and serve from it "
        "(about two minutes; by default the wheel is only built and its files listed)",
    )
    parser.addoption(
        "--fuzz-seed", type=int, default=20261201, help="schemathesis seed (fixed, so a run can be repeated)"
    )


@pytest.fixture(autouse=True)
def clean_environ(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never read the real environment or config file: HIVEMEM_* is cleared, and the XDG dirs
    (config, data, state) are private.

    The cache dir (derived model files, such as the embedder's ONNX copy) is private to the run and
    shared by its tests, so a model is exported once per run, not once per test.
    """
    for key in list(os.environ):
        if key.startswith("HIVEMEM_"):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))
    yield


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a private data dir with the model-free hash embedder."""
    return Settings(data_dir=tmp_path / "data", embed_model="hash:64")


@pytest.fixture
def cli_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI run in this process on its own data folder (tmp_path/data), with the hash embedder
    and no server to call."""
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A data folder and a log folder for the processes a test starts."""
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    return data_dir, logs


@pytest.fixture(scope="session")
def cross_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised cross-encoder folder (tests/rerank_models.py), built once."""
    pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
    from tests.rerank_models import tiny_cross_encoder

    return tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


@pytest.fixture
def embedder() -> HashEmbedder:
    """The deterministic test embedder."""
    return HashEmbedder(64)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One private ``redis-server`` for the session (the Debian package ``redis-server``)."""
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does it)")
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The private Redis, emptied for this test."""
    redis.Redis.from_url(redis_server.url).flushdb()
    return redis_server.url
