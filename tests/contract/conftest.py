"""The Store contract runs once per backend; a backend that cannot run here skips, saying why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivemem.embedding import HashEmbedder
from search import Store, open_store

BACKENDS = [
    pytest.param("sqlite-file", id="sqlite-file"),
    pytest.param("sqlite-memory", id="sqlite-memory"),
]


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'hive.db'}"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, embedder: HashEmbedder) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'hive.db'}" if request.param == "sqlite-file" else "sqlite://:memory:"
    opened = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    yield opened
    opened.drop()
