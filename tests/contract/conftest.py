"""The Store contract runs once per backend; a backend that cannot run here skips, saying why.

OpenSearch runs against a real cluster when ``HIVEMEM_TEST_OPENSEARCH_URL`` is set, else against
``osmem-server`` (an in-memory OpenSearch API server started once per session). osmem has no
k-NN, no ``hybrid`` query and no search pipelines: tests marked ``needs_knn`` skip there (on
SQLite they run), unless also marked ``knn_standin``, which answers their k-NN searches with an
exact stand-in for the plugin (tests/opensearch_knn_standin.py). Every request the OpenSearch
store sends is validated against the OpenSearch API spec on its way out (tests/opensearch_spec.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from search import Store, open_store
from tests.opensearch_backend import OpenSearchBackend, opensearch_backend, spec_validator

__all__ = ["opensearch_backend", "spec_validator"]  # fixtures, re-exported for pytest

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
        standin = request.node.get_closest_marker("knn_standin") is not None
        if request.node.get_closest_marker("needs_knn") and not backend.has_knn and not standin:
            pytest.skip(backend.no_knn_reason)
        validator = request.getfixturevalue("spec_validator")
        opened: Store = backend.open(embedder, Settings(), validator, exact_knn=standin)
    else:
        url = f"sqlite:///{tmp_path / 'hive.db'}" if request.param == "sqlite-file" else "sqlite://:memory:"
        opened = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    yield opened
    opened.drop()
