"""The OpenSearch side of the tests: a real node, or osmem-server for fast unit tiers, with every
request spec-checked.

Where the tests connect, once per session:

- ``HIVEMEM_TEST_OPENSEARCH_URL`` (e.g. ``opensearch+http://localhost:9200``): that cluster;
- else a private real node (``scripts/opensearch-node``: OpenSearch with the k-NN plugin, fetched
  from Maven Central and cached) on free ports, in a folder of its own, stopped at the end;
- ``HIVEMEM_TEST_OPENSEARCH=osmem``: a private ``osmem-server`` (OpenSearch's API in memory, no
  k-NN, no hybrid query, no pipelines), for a quick run; also what a machine without Java or Maven
  gets, unless ``HIVEMEM_TEST_OPENSEARCH=node`` says the real node is required (CI says so).

Tests that need k-NN skip on osmem-server, saying why. Each store gets a unique index prefix and
drops it in teardown. Import the fixtures into a ``conftest.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.suite.local_cluster import start_osmem
from bench.suite.opensearch_node import NodeUnavailableError, OpenSearchNode, node_prerequisites
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from search.opensearch.setup import NEURAL_SEARCH, installed_plugins
from search.opensearch.tuning import OpenSearchTuning
from search.recall_params import RecallParams
from tests.opensearch_spec import SPEC_DIR, SpecValidator, checked_connection

__all__ = ["OpenSearchBackend", "opensearch_backend", "private_node", "real_backend", "spec_validator", "start_osmem"]

# Read at import: the autouse clean_environ fixture clears HIVEMEM_* before each test.
REAL_CLUSTER_URL = os.environ.get("HIVEMEM_TEST_OPENSEARCH_URL", "")
SERVER_CHOICE = os.environ.get("HIVEMEM_TEST_OPENSEARCH", "")
_CHOICES = ("", "node", "osmem")
NO_SPEC_REASON = f"the OpenSearch API spec is not at {SPEC_DIR} (a sibling checkout ../shared/opensearch-api-spec)"


# A real node refreshes each index every second by default, and every single write waits for that
# refresh: a test of twenty writes would spend twenty seconds waiting.
TEST_REFRESH_INTERVAL_MS = 50


def tuning_for_tests(tuning: OpenSearchTuning | None = None) -> OpenSearchTuning:
    """``tuning`` (None: no replicas) with the test refresh interval unless it names its own."""
    tuning = tuning or OpenSearchTuning(opensearch_replicas=0)
    if "opensearch_refresh_interval_ms" in tuning.model_fields_set:
        return tuning
    return tuning.model_copy(update={"opensearch_refresh_interval_ms": TEST_REFRESH_INTERVAL_MS})


@dataclass
class OpenSearchBackend:
    """Where OpenSearch tests connect, and what that server can do."""

    url: str
    has_knn: bool
    has_hybrid: bool = False
    why_osmem: str = ""

    @property
    def no_knn_reason(self) -> str:
        why = f" ({self.why_osmem})" if self.why_osmem else ""
        return (
            f"osmem-server{why} has no k-NN, hybrid query or search pipelines; run without "
            "HIVEMEM_TEST_OPENSEARCH=osmem on a machine with Java and Maven, or set HIVEMEM_TEST_OPENSEARCH_URL"
        )

    @property
    def no_hybrid_reason(self) -> str:
        return (
            f"the cluster at {self.url} has no opensearch-neural-search plugin (the hybrid query and the "
            "normalization/RRF search pipelines); Maven Central does not serve it for the node of "
            "scripts/opensearch-node, so recall there runs the core fusion"
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
        needs_knn: bool = False,
        tuning: OpenSearchTuning | None = None,
        recall: RecallParams | None = None,
    ) -> Any:
        """An :class:`search.opensearch.OpenSearchStore` on a fresh prefix, requests validated when possible.

        ``needs_knn``: the test skips where the server has no k-NN plugin. ``tuning`` None: no
        replicas (a test cluster is one node). Unless ``tuning`` sets it, indices refresh every
        :data:`TEST_REFRESH_INTERVAL_MS`, so a write waiting for its refresh is quick.
        """
        from search.opensearch import OpenSearchStore

        if needs_knn and not self.has_knn:
            pytest.skip(self.no_knn_reason)
        connection: type[Any] | None = None if validator is None else checked_connection(validator)
        return OpenSearchStore(
            self.url_for(prefix),
            embedding_model=embedder.model_id,
            dimension=embedder.dimension,
            settings=settings,
            tuning=tuning_for_tests(tuning),
            recall=recall,
            connection_class=connection,
        )


def cluster_plugins(url: str) -> set[str]:
    """The plugins a real cluster's nodes have (``_cat/plugins``, as setup reads them)."""
    from search.opensearch.client import make_client, parse_url

    target = parse_url(url)
    client = make_client(target, Settings())
    try:
        return installed_plugins(client, target) or set()
    finally:
        client.close()


def real_backend(url: str) -> OpenSearchBackend:
    """The backend of a real cluster, with what its plugins can do."""
    plugins = cluster_plugins(url)
    return OpenSearchBackend(url, has_knn="opensearch-knn" in plugins, has_hybrid=NEURAL_SEARCH in plugins)


@contextmanager
def private_node() -> Iterator[OpenSearchNode]:
    """A real node of ``scripts/opensearch-node`` in a fresh folder, stopped and removed afterwards."""
    # Under /tmp, not pytest's folder: run as root, the node runs as another user, who must be able
    # to enter every folder above its own (pytest's are private to the user running it).
    node = OpenSearchNode(Path(tempfile.mkdtemp(prefix="hivemem-opensearch-")))
    try:
        node.start()
        yield node
    finally:
        node.stop()
        shutil.rmtree(node.node_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def opensearch_backend() -> Iterator[OpenSearchBackend]:
    """The session's OpenSearch: a named cluster, a private real node, or osmem-server (module doc)."""
    if SERVER_CHOICE not in _CHOICES:
        raise pytest.UsageError(f"HIVEMEM_TEST_OPENSEARCH={SERVER_CHOICE!r}: use node or osmem")
    if REAL_CLUSTER_URL:
        yield real_backend(REAL_CLUSTER_URL.rstrip("/"))
        return
    why_osmem = "HIVEMEM_TEST_OPENSEARCH=osmem"
    if SERVER_CHOICE != "osmem":
        missing = node_prerequisites()
        if missing and SERVER_CHOICE == "node":
            pytest.fail(f"HIVEMEM_TEST_OPENSEARCH=node, but a real node cannot run here: {missing}")
        if not missing:
            try:
                with private_node() as node:
                    yield real_backend(node.url.replace("http://", "opensearch+http://", 1))
            except NodeUnavailableError as exc:
                pytest.fail(f"{exc}\n(HIVEMEM_TEST_OPENSEARCH=osmem runs these tiers on osmem-server instead)")
            return
        why_osmem = f"a real node cannot run here: {missing}"
    try:
        process, url = start_osmem()
    except (ImportError, OSError, RuntimeError) as exc:
        pytest.skip(f"osmem-server cannot start here ({exc}); install hivemem[dev] or set HIVEMEM_TEST_OPENSEARCH_URL")
    try:
        yield OpenSearchBackend(url.replace("http://", "opensearch+http://", 1), has_knn=False, why_osmem=why_osmem)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="session")
def spec_validator() -> SpecValidator | None:
    """The session's spec validator, or None when the spec folder is absent (bodies then go unchecked)."""
    return SpecValidator() if SPEC_DIR.is_dir() else None
