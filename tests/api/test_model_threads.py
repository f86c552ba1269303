"""The embedded shape runs as many model threads as its embedder asks for, or as configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder, parallel_calls
from hivemem.embedding_queue import QueuedEmbedder


def test_the_service_runs_as_many_model_threads_as_the_embedder_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Parallel(HashEmbedder):
        parallel_calls = 3

    assert parallel_calls(Parallel(16)) == 3 and parallel_calls(HashEmbedder(16)) == 1
    service = MemoryService.from_settings(Settings(data_dir=tmp_path), embedder=Parallel(16))
    try:
        assert isinstance(service.embedder, QueuedEmbedder) and service.embedder.threads == 3
    finally:
        service.close()
    monkeypatch.setenv("HIVEMEM_EMBED_PARALLEL", "1")
    chosen = MemoryService.from_settings(Settings(data_dir=tmp_path), embedder=Parallel(16))
    try:
        assert isinstance(chosen.embedder, QueuedEmbedder) and chosen.embedder.threads == 1
    finally:
        chosen.close()
