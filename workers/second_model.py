"""The second dense leg's vectors: a second model's vector of every memory, filled in the background.

With ``HIVEMEM_SECOND_EMBED_MODEL`` set, recall fuses that model's cosine as one more leg
(:mod:`search.recall`). Its vectors are derived data kept by the store
(:class:`search.capabilities.KeepsSecondVectors`): this filler embeds whatever memory has none for
its content, on a thread of its own, batch after batch, and looks again when told of a write
(:meth:`SecondLeg.nudge`) or every ``poll_s`` for writes of other processes (Celery workers, other
servers on one store). Writes never wait for it: the second model costs more work on every memory
(e5-small about twice MiniLM's, bench/RESULTS.md), and a memory recalled before its vector is made
is still found by the other legs.

A failed batch (the model, the store) is logged and tried again from a full look after
``retry_s``; what was stored stays stored. On start, the vectors of any other second model (one
configured before) are dropped: one second model is kept at a time.
"""

from __future__ import annotations

import logging
import threading

from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.embedding_queue import QueuedEmbedder
from search.capabilities import KeepsSecondVectors

__all__ = ["SecondLeg", "second_model_settings"]

log = logging.getLogger(__name__)


def second_model_settings(settings: Settings) -> Settings:
    """The settings that load the second model: ``HIVEMEM_SECOND_EMBED_MODEL`` with its own prefixes
    (e5's ``query: `` / ``passage: ``), not those configured for the first model."""
    return settings.model_copy(
        update={"embed_model": settings.second_embed_model.strip(), "query_prefix": "", "passage_prefix": ""}
    )


class SecondLeg:
    """Keeps ``store``'s ``embedder`` vectors of every memory current, on a thread of its own."""

    def __init__(
        self,
        store: KeepsSecondVectors,
        embedder: Embedder,
        *,
        batch: int = 64,
        poll_s: float = 5.0,
        retry_s: float = 10.0,
    ) -> None:
        self._store = store
        self.embedder = embedder
        self._batch = batch
        self._poll_s = poll_s
        self._retry_s = retry_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._caught_up = threading.Condition()
        self._nudges = 0  # nudges so far
        self._covered = 0  # the nudges before the start of the last look that found nothing pending
        self._last_failure: str | None = None
        self.made = 0  # vectors made by this filler, for the server's metrics
        self.caught_up = False  # whether the last look found every memory with a current vector
        self._thread = threading.Thread(target=self._run, name="hivemem-second-leg", daemon=True)

    @property
    def model(self) -> str:
        """The second model, as its vectors are recorded."""
        return self.embedder.model_id

    @property
    def last_failure(self) -> str | None:
        """Why the last batch failed, until one succeeds."""
        return self._last_failure

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._thread.ident is not None

    def start(self) -> None:
        """Start filling."""
        self._thread.start()

    def nudge(self) -> int:
        """Look for pending memories now (something was written); the nudge's number."""
        with self._caught_up:
            self._nudges += 1
            number = self._nudges
        self._wake.set()
        return number

    def remaining(self) -> int:
        """Memories without a current vector of the second model."""
        return self._store.second_vectors_remaining(self.model)

    def wait_caught_up(self, timeout_s: float) -> bool:
        """Wait until a look begun after this call finds nothing pending; False after ``timeout_s``
        or once closed."""
        number = self.nudge()
        with self._caught_up:
            self._caught_up.wait_for(lambda: self._covered >= number or self._stop.is_set(), timeout_s)
            return self._covered >= number

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop after the batch in hand, and the model's threads with it."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        with self._caught_up:
            self._caught_up.notify_all()
        if isinstance(self.embedder, QueuedEmbedder):
            self.embedder.close()

    def _fill_once(self) -> bool:
        """Embed and store one batch; False when nothing was pending."""
        pending = self._store.second_vectors_pending(self.model, self._batch)
        if not pending:
            return False
        self.caught_up = False
        vectors = self.embedder.embed_passages([m.embedding_text() for m in pending])
        self._store.put_second_vectors(self.model, self.embedder.dimension, list(zip(pending, vectors, strict=True)))
        self.made += len(pending)
        return True

    def _run(self) -> None:
        try:
            dropped = self._store.second_vectors_keep_only(self.model)
            if dropped:
                log.info("second model's vectors: dropped %d of models no longer configured", dropped)
        except Exception as exc:  # stale rows cost space only; filling matters more
            log.warning("second model's vectors: could not drop other models' (%s)", exc)
        while not self._stop.is_set():
            with self._caught_up:
                nudges = self._nudges
            try:
                filled = self._fill_once()
            except Exception as exc:  # the filler outlives a failed batch; the next look starts over
                self._last_failure = str(exc)
                self.caught_up = False
                log.warning("second model's vectors: a batch failed (%s); trying again in %.0f s", exc, self._retry_s)
                self._store.second_vectors_rescan(self.model)
                self._stop.wait(self._retry_s)
                continue
            self._last_failure = None
            if filled:
                continue
            self.caught_up = True
            with self._caught_up:
                self._covered = max(self._covered, nudges)
                self._caught_up.notify_all()
                if self._nudges != nudges:
                    continue  # told of a write during the look: look again at once
                self._wake.clear()
            self._wake.wait(self._poll_s)
