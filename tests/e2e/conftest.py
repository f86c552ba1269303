"""Fixtures for end-to-end tests: a real ``hivemem serve``, a data dir, a fake git checkout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import HivememServer


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def server(tmp_path: Path, data_dir: Path) -> Iterator[HivememServer]:
    """A running ``hivemem serve`` on a free port over ``data_dir``; stopped after the test."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    running = HivememServer(data_dir, log_dir)
    try:
        running.start()
        yield running
    finally:
        running.stop()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI run in this process on tmp_path/data with the hash embedder; the data folder."""
    data = tmp_path / "data"
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(data))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    return data


@pytest.fixture
def git_checkout(tmp_path: Path) -> Path:
    """A folder that looks like a clone of git@github.com:acme/widgets.git (only ``.git/config``)."""
    repo = tmp_path / "work" / "widgets"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n"
        '[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        encoding="utf-8",
    )
    return repo
