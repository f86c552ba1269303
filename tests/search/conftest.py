"""Fixtures of the search tests: the OpenSearch backend (osmem-server or a real cluster), the spec
validator, and services opened on either store."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from api.services.memories import MemoryService
from api.services.parts import Parts
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.model import RetrievalMode
from tests.opensearch_backend import OpenSearchBackend

__all__ = ["OpenService", "open_service", "with_mode"]  # fixtures, re-exported

OpenService = Callable[[Settings], MemoryService]
FIRST = HashEmbedder(64)


def with_mode(service: MemoryService, mode: RetrievalMode) -> None:
    """Switch which recall legs ``service`` runs, as the benchmarks' harness does."""
    service.recaller.params = service.recaller.params.model_copy(update={"retrieval_mode": mode})


@pytest.fixture(params=["sqlite", pytest.param("opensearch", marks=pytest.mark.opensearch)])
def open_service(request: pytest.FixtureRequest) -> Iterator[OpenService]:
    """Opens services on one store, each with the settings given (the model hash:64); on OpenSearch
    skipping on OpenSearch where the server has no k-NN plugin."""
    if request.param == "sqlite":
        yield MemoryService.from_settings
        return
    backend: OpenSearchBackend = request.getfixturevalue("opensearch_backend")
    if not backend.has_knn:
        pytest.skip(backend.no_knn_reason)
    validator = request.getfixturevalue("spec_validator")
    prefix = f"test_{uuid.uuid4().hex[:16]}"

    def on_opensearch(settings: Settings) -> MemoryService:
        store = backend.open(FIRST, Settings(), validator, prefix, needs_knn=True)
        return MemoryService(Parts(settings, store, QueuedEmbedder(FIRST, max_batch=64)))

    yield on_opensearch
    backend.open(FIRST, Settings(), None, prefix).drop()
