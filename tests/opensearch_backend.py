"""The OpenSearch side of the tests: osmem-server or a real cluster, with every request spec-checked.

``HIVEMEM_TEST_OPENSEARCH_URL`` (e.g. ``opensearch+http://localhost:9200``) names a real cluster;
without it a private ``osmem-server`` starts once per session on a free port. Each store gets a
unique index prefix and drops it in teardown. Import the fixtures into a ``conftest.py``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bench.suite.local_cluster import start_osmem
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from search.opensearch.tuning import OpenSearchTuning
from search.recall_params import RecallParams
from tests.opensearch_knn_standin import exact_knn_connection
from tests.opensearch_spec import SPEC_DIR, SpecValidator, checked_connection

__all__ = ["OpenSearchBackend", "opensearch_backend", "spec_validator", "start_osmem"]

# Read at import: the autouse clean_environ fixture clears HIVEMEM_* before each test.
REAL_CLUSTER_URL = os.environ.get("HIVEMEM_TEST_OPENSEARCH_URL", "")
NO_SPEC_REASON = f"the OpenSearch API spec is not at {SPEC_DIR} (a sibling checkout ../shared/opensearch-api-spec)"


@dataclass
class OpenSearchBackend:
    """Where OpenSearch tests connect, and what that server can do."""

    url: str
    has_knn: bool

    @property
    def no_knn_reason(self) -> str:
        return (
            "osmem-server has no k-NN, hybrid query or search pipelines; set HIVEMEM_TEST_OPENSEARCH_URL "
            "to a real cluster to run this (its request bodies are spec-validated in unit tests)"
        )

    def url_for(self, prefix: str | None = None) -> str:
        """The store URL with a unique (or the given) index prefix."""
        return f"{self.url}/?index={prefix or 'test_' + uuid.uuid4().hex[:16]}"

    def open(
        self,
        embedder: HashEmbedder,
        settings: Settings,
        validator: SpecValidator | None,
        prefix: str | None = None,
        *,
        exact_knn: bool = False,
        tuning: OpenSearchTuning | None = None,
        recall: RecallParams | None = None,
    ) -> Any:
        """An :class:`search.opensearch.OpenSearchStore` on a fresh prefix, requests validated when possible.

        ``exact_knn`` on a server without k-NN answers k-NN searches with the exact stand-in
        (tests/opensearch_knn_standin.py); a real cluster always answers them itself. ``tuning``
        None: no replicas (a test cluster is one node).
        """
        from search.opensearch import OpenSearchStore

        connection: type[Any] | None = None if validator is None else checked_connection(validator)
        if exact_knn and not self.has_knn:
            connection = exact_knn_connection(validator)
        return OpenSearchStore(
            self.url_for(prefix),
            embedding_model=embedder.model_id,
            dimension=embedder.dimension,
            settings=settings,
            tuning=tuning or OpenSearchTuning(opensearch_replicas=0),
            recall=recall,
            connection_class=connection,
        )


@pytest.fixture(scope="session")
def opensearch_backend() -> Iterator[OpenSearchBackend]:
    """A real cluster (``HIVEMEM_TEST_OPENSEARCH_URL``) or a private osmem-server for the session."""
    if REAL_CLUSTER_URL:
        yield OpenSearchBackend(REAL_CLUSTER_URL.rstrip("/"), has_knn=True)
        return
    try:
        process, url = start_osmem()
    except (ImportError, OSError, RuntimeError) as exc:
        pytest.skip(f"osmem-server cannot start here ({exc}); install hivemem[dev] or set HIVEMEM_TEST_OPENSEARCH_URL")
    try:
        yield OpenSearchBackend(url.replace("http://", "opensearch+http://", 1), has_knn=False)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="session")
def spec_validator() -> SpecValidator | None:
    """The session's spec validator, or None when the spec folder is absent (bodies then go unchecked)."""
    return SpecValidator() if SPEC_DIR.is_dir() else None
