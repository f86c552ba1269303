"""The parts a service runs on, opened as the settings say: the store (with the embedder it was
written with), the embedder on its own threads, the job runner, the reranker and the second model."""

from __future__ import annotations

from api.process.cpu_priority import lower_this_thread
from hivemem.config import Settings
from hivemem.embedding import Embedder, parallel_calls
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import ConfigError, EmbeddingError, EmbeddingMismatchError
from hivemem.lazy_embedder import LazyEmbedder
from hivemem.rerank import Reranker
from search import Store, open_store, recorded_embedding
from search.capabilities import KeepsSecondVectors
from workers.models.embed import load_embedder
from workers.models.embed_tuning import EmbedTuning
from workers.models.rerankers import load_reranker
from workers.runner import InProcessRunner, Runner
from workers.second_model import SecondLeg, second_model_settings

__all__ = ["make_reranker", "make_runner", "make_second_leg", "open_configured", "queued"]


def open_configured(
    settings: Settings, embedder: Embedder | None = None, *, lazy_model: bool = False
) -> tuple[Store, QueuedEmbedder, Embedder | None]:
    """The configured store, the embedder that serves it, and the model to re-embed it with when it
    holds another model's vectors (None when it holds the configured one's).

    The embedder runs on threads of its own, where calls from every request are batched
    (:mod:`hivemem.embedding_queue`). ``lazy_model`` (the CLI): a store that records its model is
    opened with that record, and the model loads only if something is embedded.
    """
    embedder = embedder or load_embedder(settings)
    if lazy_model and not isinstance(embedder, QueuedEmbedder):
        recorded = recorded_embedding(settings.resolved_store_url(), settings)
        if recorded is not None:
            # The store's own model, even after a model change: a CLI call works on the store as
            # it is, and leaves re-embedding to the server (or `hivemem reembed`).
            configured = embedder
            model, dimension = recorded

            def load() -> Embedder:
                if configured.model_id == model:
                    return configured
                return load_embedder(settings.model_copy(update={"embed_model": model}))

            embedder = LazyEmbedder(model, dimension, load=load)
    if not isinstance(embedder, QueuedEmbedder):
        embedder = queued(settings, embedder)
    url = settings.resolved_store_url()
    try:
        store = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension, settings=settings)
    except EmbeddingMismatchError as mismatch:
        recorded = recorded_embedding(url, settings) if settings.reembed_on_model_change else None
        if recorded is None:
            raise
        # The store holds another model's vectors: serve them with that model, and move to the
        # configured one in the background.
        try:
            serving = load_embedder(settings.model_copy(update={"embed_model": recorded[0]}))
        except EmbeddingError as exc:
            raise EmbeddingMismatchError(f"{mismatch}; the store's model cannot be loaded to serve it ({exc})") from exc
        target = embedder.inner
        embedder.switch(serving)
        store = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension, settings=settings)
        return store, embedder, target
    return store, embedder, None


def make_runner(settings: Settings, store: Store, embedder: Embedder) -> Runner:
    """The runner the settings ask for: Celery workers when a broker is set, else this process."""
    if settings.broker_url:
        from workers.celery_runner import CeleryRunner

        return CeleryRunner(settings)
    return InProcessRunner(store, embedder, settings=settings)


def make_reranker(settings: Settings) -> Reranker | None:
    """The rerank stage's reranker: the pool's client (``HIVEMEM_RERANK_POOL``), the model itself, or None."""
    if settings.rerank_pool:
        from workers.rerank_pool import PoolReranker  # Celery is imported only by a gateway that uses it

        return PoolReranker(settings)
    return load_reranker(settings)


def make_second_leg(settings: Settings, store: Store, *, one_off: bool = False) -> SecondLeg | None:
    """The second dense leg (``HIVEMEM_SECOND_EMBED_MODEL``): its model on threads of its own, and
    the filler of its vectors (not started: a server starts it), or None when none is configured.

    ``one_off`` (a CLI call): one model thread, so the model loads with its first text, if any (how
    many threads a runtime runs well is only known once it is loaded: seconds a ``get`` never needs)."""
    name = settings.second_embed_model.strip()
    if not name:
        return None
    if not isinstance(store, KeepsSecondVectors):
        raise ConfigError(
            "HIVEMEM_SECOND_EMBED_MODEL: the second dense leg needs a store that keeps a second model's "
            "vectors (SQLite and OpenSearch do); this store keeps one vector per memory"
        )
    embedder = load_embedder(second_model_settings(settings))
    return SecondLeg(store, queued(settings, embedder, threads=1 if one_off else None))


def queued(settings: Settings, embedder: Embedder, *, threads: int | None = None) -> QueuedEmbedder:
    """``embedder`` on threads of its own, batching every caller: ``threads``, else as many as
    configured, else as many calls at once as its runtime runs well."""
    tuning = EmbedTuning()
    threads = threads or tuning.embed_parallel or parallel_calls(embedder)
    # Document chunks on threads of their own at the lowest priority (api.process.cpu_priority): measured
    # with 8 clients recalling during a 5 MB upload, recall's p95 was 6.5x its idle p95 with the
    # chunks on the same threads as queries.
    return QueuedEmbedder(embedder, max_batch=tuning.embed_batch_size, threads=threads, background=lower_this_thread)
