"""The in-process runner: the embedded shape's job queue, with the same job functions as workers.

``memorize`` runs in the caller's thread; the store resolves and writes atomically, so two
requests writing the same fact at once end with one memory without any lock here. Access
reinforcement goes to one background thread so recall never waits on a write.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from hivemem.embedding import Embedder
from hivemem.model import Memory, utcnow
from hivemem.resolution import Resolution
from search.base import Store
from workers import jobs

__all__ = ["InProcessRunner"]

log = logging.getLogger(__name__)


class InProcessRunner:
    """Runs jobs in this process. Thread-safe."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self._store = store
        self._embedder = embedder
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hivemem-bg")

    def memorize(self, memory: Memory) -> Resolution:
        """Run the memorize job now and return its resolution."""
        return jobs.memorize(self._store, self._embedder, memory, utcnow())

    def memorize_many(self, memories: Sequence[Memory]) -> list[Resolution]:
        """Run a bulk memorize now, embedding every new text in one batch."""
        return jobs.memorize_many(self._store, self._embedder, memories, utcnow())

    def record_access(self, memory_ids: Sequence[str]) -> None:
        """Queue access reinforcement for these ids; returns at once."""
        if memory_ids:
            self._background.submit(self._record_access, list(memory_ids))

    def _record_access(self, memory_ids: list[str]) -> None:
        try:
            jobs.record_access(self._store, memory_ids, utcnow())
        except Exception:  # a failed counter update must never surface to a caller
            log.exception("recording access for %d memories failed", len(memory_ids))

    def drain(self) -> None:
        """Wait for queued background jobs (tests, shutdown)."""
        self._background.submit(lambda: None).result()

    def close(self) -> None:
        """Finish queued jobs and stop the background thread."""
        self._background.shutdown(wait=True)
