"""The parts the services run on, opened as the settings say and owned by one object, :class:`Parts`:
the store (with the embedder it was written with), the embedder on its own threads, the job
runner, the gates recalls share, and the background passes (the second model's filler, a
re-embedding). The reranker is the recall's (:func:`make_reranker`)."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from contextlib import suppress

from api.process.cpu_priority import lower_this_thread
from api.process.memory import release_free_memory
from hivemem.admission import search_gate_for
from hivemem.config import Settings
from hivemem.embedding import Embedder, parallel_calls
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import ConfigError, EmbeddingError, EmbeddingMismatchError, StoreError, StoreUnavailableError
from hivemem.jobs import Job
from hivemem.lazy_embedder import LazyEmbedder
from hivemem.read_write_lock import ReadWriteLock
from hivemem.rerank import Reranker
from search import Store, open_store, recorded_embedding
from search.capabilities import KeepsSecondVectors, ReEmbeds, Warms
from workers.job_board import JobBoard, MemoryJobBoard
from workers.local_job_board import JOB_BOARD_FILE, LocalJobBoard
from workers.models.embed import load_embedder
from workers.models.embed_tuning import EmbedTuning
from workers.models.rerankers import load_reranker
from workers.reembed import Reembedding
from workers.runner import InProcessRunner, Runner
from workers.second_model import SecondLeg, second_model_settings

__all__ = [
    "Parts",
    "make_reranker",
    "make_runner",
    "make_second_leg",
    "open_configured",
    "queued",
    "shared_job_board",
]

log = logging.getLogger(__name__)


class Parts:
    """The parts of one service, opened once and closed together (:meth:`close`).

    The application services (memories, knowledge, lifecycle, tokens, operators, transfer) take
    what they need from it; one that keeps threads or timers of its own hands its closing to
    :meth:`on_close`, so that it ends before the runner, the embedder and the store it uses.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder,
        runner: Runner | None = None,
        *,
        one_off: bool = False,
    ) -> None:
        """``one_off``: a CLI call's parts, whose second model (if any) loads only when it embeds."""
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.runner = runner or make_runner(settings, store, embedder, one_off=one_off)
        # Recalls and knowledge searches share one gate: they share the cores (hivemem.admission).
        self.search_gate = search_gate_for(settings)
        # Recalls hold it shared from embedding their query to searching; a re-embed's swap holds it
        # alone, so no recall embeds with one model and searches the other's vectors.
        self.model_gate = ReadWriteLock()
        self.second_leg = make_second_leg(settings, store, one_off=one_off)
        self.reembedding: Reembedding | None = None
        self._closers: list[Callable[[], None]] = []

    def on_close(self, close: Callable[[], None]) -> None:
        """Run ``close`` first when the parts close (the last one handed, first)."""
        self._closers.append(close)

    def start_reembed(self, target: Embedder, author: str) -> Job:
        """Re-embed every memory and chunk with ``target`` in the background (:mod:`workers.reembed`),
        or, while one runs, its job. Raises ``ConfigError`` for a store that cannot re-embed in
        place or an embedder that cannot be switched."""
        if self.reembedding is not None:
            current = self.runner.board.get(self.reembedding.job.id)
            if not current.state.final:
                return current
        if not isinstance(self.embedder, QueuedEmbedder) or not isinstance(self.store, ReEmbeds):
            raise ConfigError("this store cannot be re-embedded in place (export it and import it into a new one)")
        self.reembedding = Reembedding(
            self.store, self.embedder, target, self.runner.board, self.model_gate, author=author
        )
        return self.reembedding.start()

    def start_second_leg(self) -> None:
        """Fill the second model's vectors in the background (a server's; a one-off command only
        recalls with those there). Stopped by ``close``."""
        if self.second_leg is not None and not self.second_leg.started:
            self.second_leg.start()

    def written(self) -> None:
        """Memories were written: the second model's filler looks for them now, not at its next poll."""
        if self.second_leg is not None:
            self.second_leg.nudge()

    def warm_up(self) -> None:
        """Load the embedding model and the store's in-memory indexes now, so the first request
        doesn't pay for them; then move what was loaded out of the garbage collector's way.

        ``gc.freeze`` matters for the tail: a collection scanning hundreds of thousands of
        long-lived index objects took a recall's p95 from 48 to 212 ms in a profile at 10k memories.
        """
        self.embedder.embed_queries(["warm up"])
        if isinstance(self.store, Warms):
            try:
                self.store.warm()
            except StoreError as exc:
                # The server still starts: the store marks itself unready and every request says why.
                log.warning("loading the store's index failed: %s", exc)
        gc.collect()
        gc.freeze()
        release_free_memory()

    def ready(self) -> dict[str, bool]:
        """Readiness of each dependency: the store answers, the embedder is usable, and with a
        broker, the broker answers and at least one worker is up."""
        checks = {"store": False, "embedder": False}
        with suppress(Exception):
            self.store.check()
            checks["store"] = True
        with suppress(Exception):
            checks["embedder"] = self.embedder.dimension > 0
        return checks | self.runner.ready()

    def close(self) -> None:
        """Close the services that handed their closing, then the background passes, the runner,
        the embedder's threads and the store."""
        for close in reversed(self._closers):
            close()
        if self.reembedding is not None:
            self.reembedding.stop()
        if self.second_leg is not None:
            self.second_leg.close()
        self.runner.close()
        if isinstance(self.embedder, QueuedEmbedder):
            self.embedder.close()
        self.store.close()


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


def make_runner(settings: Settings, store: Store, embedder: Embedder, *, one_off: bool = False) -> Runner:
    """The runner the settings ask for: Celery workers when a broker is set, else this process, with
    the job board this machine's hivemem processes share (``DATA/jobs.db``): the jobs of a stdio
    server answer on `hivemem serve` and fill its Jobs page. A CLI call (``one_off``) keeps its one
    job to itself: it prints no job id, and ends with it."""
    if settings.broker_url:
        from workers.celery_runner import CeleryRunner

        return CeleryRunner(settings)
    return InProcessRunner(store, embedder, board=None if one_off else shared_job_board(settings), settings=settings)


def shared_job_board(settings: Settings) -> JobBoard:
    """The job board in the data folder; where it cannot be opened (a read-only folder), one of
    this process alone, said in the log."""
    path = settings.data_dir.expanduser() / JOB_BOARD_FILE
    try:
        return LocalJobBoard(path)
    except StoreUnavailableError as exc:
        log.warning("jobs are kept in this process only: %s", exc)
        return MemoryJobBoard()


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
