"""The Store contract runs once per backend; a backend that cannot run here skips, saying why.

OpenSearch runs against a real node (tests/opensearch_backend.py says which and how to choose):
with ``HIVEMEM_TEST_OPENSEARCH=osmem`` against ``osmem-server`` (an in-memory OpenSearch API
server), which has no k-NN, no ``hybrid`` query and no search pipelines, so tests marked
``needs_knn`` skip there (on SQLite they run). Every request the OpenSearch store sends is
validated against the OpenSearch API spec on its way out (tests/opensearch_spec.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from search import Store, open_store
from tests.opensearch_backend import OpenSearchBackend

BACKENDS = [
    pytest.param("sqlite-file", id="sqlite-file"),
    pytest.param("sqlite-memory", id="sqlite-memory"),
    pytest.param("opensearch", id="opensearch", marks=pytest.mark.opensearch),
]


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'hive.db'}"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, embedder: HashEmbedder) -> Iterator[Store]:
    if request.param == "opensearch":
        backend: OpenSearchBackend = request.getfixturevalue("opensearch_backend")
        needs_knn = request.node.get_closest_marker("needs_knn") is not None
        validator = request.getfixturevalue("spec_validator")
        opened: Store = backend.open(embedder, Settings(), validator, needs_knn=needs_knn)
    else:
        url = f"sqlite:///{tmp_path / 'hive.db'}" if request.param == "sqlite-file" else "sqlite://:memory:"
        opened = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    yield opened
    opened.drop()
