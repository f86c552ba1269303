"""What a worker process needs, opened lazily once per process: settings, store, embedder, reranker, job board.

Nothing loads in ``worker_process_init`` (Celery gives it 4 s): the first task of a process opens
the store and, if it embeds, loads the model. The cache is keyed by process id, because prefork
children must not reuse connections their parent opened before the fork.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.errors import ConfigError
from hivemem.rerank import Reranker
from search import Store, open_store
from workers.job_board import RedisJobBoard
from workers.job_tuning import JobTuning
from workers.models.embed import load_embedder
from workers.models.rerankers import load_reranker

if TYPE_CHECKING:
    import redis

__all__ = ["WorkerContext", "close_current", "current"]


@dataclass
class WorkerContext:
    """The resources of one worker process. Thread-safe to build; each property opens on first use."""

    settings: Settings
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @cached_property
    def redis(self) -> redis.Redis:
        """A client of the broker's Redis (job board, scope locks)."""
        import redis as redis_lib

        return redis_lib.Redis.from_url(self.settings.broker_url, socket_timeout=30, socket_connect_timeout=5)

    @cached_property
    def board(self) -> RedisJobBoard:
        """The job board, in the broker's Redis."""
        return RedisJobBoard(self.redis, JobTuning().job_ttl_s)

    @cached_property
    def embedder(self) -> Embedder:
        """The embedder (its model loads on the first text it encodes)."""
        return load_embedder(self.settings)

    @cached_property
    def reranker(self) -> Reranker:
        """The reranker ``HIVEMEM_RERANK_MODEL`` names (its model loads on the first pairs it scores)."""
        reranker = load_reranker(self.settings)
        if reranker is None:
            raise ConfigError("this worker consumes the rerank queue but HIVEMEM_RERANK_MODEL is empty")
        return reranker

    @cached_property
    def store(self) -> Store:
        """The store, opened with the embedder's model id and dimension."""
        with self._lock:
            return open_store(
                self.settings.resolved_store_url(),
                embedding_model=self.embedder.model_id,
                dimension=self.embedder.dimension,
                settings=self.settings,
            )

    def close(self) -> None:
        """Close what was opened (the store, the broker client); what was never opened stays so."""
        if "store" in self.__dict__:
            self.store.close()
        if "redis" in self.__dict__:
            self.redis.close()


_contexts: dict[int, WorkerContext] = {}
_contexts_lock = threading.Lock()


def current() -> WorkerContext:
    """This process's context, built from the environment's settings on first use."""
    pid = os.getpid()
    with _contexts_lock:
        context = _contexts.get(pid)
        if context is None:
            context = _contexts[pid] = WorkerContext(Settings())
        return context


def close_current() -> None:
    """Close this process's context, if it has one (worker shutdown)."""
    with _contexts_lock:
        context = _contexts.pop(os.getpid(), None)
    if context is not None:
        context.close()
