"""One thread owns the model; texts from every caller are embedded together, queries first.

Why a thread of its own: on 2 cores a batch-1 forward pass of all-MiniLM took 28–34 ms on a
request thread against 18–22 ms on the main thread, with the same torch threads: the intra-op
thread pools are per calling thread, so many request threads each spin their own. And why batches:
a forward pass over 16 short texts costs a few times one, not 16 times.

Nothing waits for a window. While a batch runs, new calls queue; the next batch takes every queued
query first (a recall is waiting on it), then memories' passages, then document chunks (an ingest
runs in the background), up to ``max_batch`` texts. A large bulk is cut into pieces of ``max_batch``
texts of similar length, so a query waits for at most one piece of it, never the whole bulk, and
little of a piece is padding. Where every call uses one core, a call of document chunks holds at
most ``DOCUMENT_CHARS_PER_CALL`` characters, so that piece is short too.

A runtime whose calls each use one core (onnxruntime, :mod:`workers.models.onnx_embed`) gets one model
thread per core (``threads``): the queued texts are then shared between the idle threads rather
than batched on one, since such a runtime gains nothing from a larger batch and a second core does.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from hivemem.embedding import Embedder, release_work_memory
from hivemem.errors import EmbeddingError
from hivemem.observe import NO_OBSERVER, Observer

__all__ = ["QueuedEmbedder"]

log = logging.getLogger(__name__)


class _Request:
    """One caller's texts; done when every piece of it is embedded, or on the first failure."""

    def __init__(self, size: int) -> None:
        self.vectors: list[list[float]] = [[] for _ in range(size)]
        self.missing = size
        self.done: Future[list[list[float]]] = Future()


# Characters of document chunks one call embeds at most, where each call uses one core (several
# model threads): about two 1,200-character chunks. Such a runtime gains nothing from wide batches
# of long texts, and a query that finds every model thread busy waits for one call: a call of 32
# chunks took 2.5 s, and recall's p95 during a 5 MB upload was 96 times its idle p95.
DOCUMENT_CHARS_PER_CALL = 2_400


class _Piece:
    __slots__ = ("positions", "request", "texts")

    def __init__(self, request: _Request, positions: Sequence[int], texts: Sequence[str]) -> None:
        self.request, self.positions, self.texts = request, positions, texts


def _chars(texts: Sequence[str]) -> int:
    return sum(len(t) for t in texts)


def _within(positions: Sequence[int], texts: Sequence[str], chars: int) -> Sequence[int]:
    """The first of ``positions`` whose texts hold at most ``chars`` characters (at least one)."""
    held = 0
    for taken, position in enumerate(positions):
        held += len(texts[position])
        if held > chars and taken > 0:
            return positions[:taken]
    return positions


class QueuedEmbedder:
    """An :class:`hivemem.embedding.Embedder` that runs ``inner`` on one thread, batching every caller."""

    def __init__(
        self,
        inner: Embedder,
        *,
        max_batch: int = 32,
        threads: int = 1,
        background: Callable[[], None] | None = None,
    ) -> None:
        """``threads`` model threads serve every lane. With ``background`` and more than one thread,
        as many more threads serve document chunks only, each calling ``background`` first (the
        server lowers their CPU priority there): an upload then takes the cores only while queries
        and memories leave them, and the others take no document work."""
        self._inner = inner
        self._max_batch = max(1, max_batch)
        self._queries: deque[_Piece] = deque()
        self._passages: deque[_Piece] = deque()
        self._documents: deque[_Piece] = deque()
        self._lanes = self._lanes_of(inner)
        self.observer: Observer = NO_OBSERVER
        self._wake = threading.Condition()
        self._closed = False
        self._idle = {False: 0, True: 0}  # idle threads, by whether they serve documents only
        count = max(1, threads)
        self._background = background if count > 1 else None
        self._threads = [
            threading.Thread(target=self._serve, args=(False,), name=f"hivemem-embed-{n}", daemon=True)
            for n in range(count)
        ]
        if self._background is not None:
            self._threads += [
                threading.Thread(target=self._serve, args=(True,), name=f"hivemem-embed-documents-{n}", daemon=True)
                for n in range(count)
            ]
        for thread in self._threads:
            thread.start()

    def _lanes_of(
        self, inner: Embedder
    ) -> tuple[tuple[deque[_Piece], Callable[[Sequence[str]], list[list[float]]]], ...]:
        """The lanes in the order they are served, each with ``inner``'s call for it."""
        return (
            (self._queries, inner.embed_queries),
            (self._passages, inner.embed_passages),
            (self._documents, inner.embed_documents),
        )

    def switch(self, inner: Embedder) -> None:
        """Embed with ``inner`` from the next batch on (a re-embedded store's new model). A batch
        already running finishes with the old one: callers read ``model_id`` before they embed, so
        such vectors are labelled with the old model and refused by a store that moved on."""
        with self._wake:
            self._inner = inner
            self._lanes = self._lanes_of(inner)

    @property
    def inner(self) -> Embedder:
        """The embedder doing the work."""
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def release_work_memory(self) -> None:
        release_work_memory(self._inner)

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.queries_later(texts).result()

    def queries_later(self, texts: Sequence[str]) -> Future[list[list[float]]]:
        """Query vectors, computed while the caller does something else (recall's keyword leg)."""
        return self._submit(self._queries, texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._submit(self._passages, texts).result()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._submit(self._documents, texts).result()

    def close(self) -> None:
        """Finish what is queued, then stop the model threads. Later calls raise ``EmbeddingError``."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        for thread in self._threads:
            if threading.current_thread() is not thread:
                thread.join()

    def _submit(self, queue: deque[_Piece], texts: Sequence[str]) -> Future[list[list[float]]]:
        request = _Request(len(texts))
        if not texts:
            request.done.set_result([])
            return request.done
        with self._wake:
            if self._closed:
                raise EmbeddingError("the embedder is closed")
            # Pieces of texts of similar length: a bulk cut in input order would pad every piece
            # to its longest text (sorting only within pieces left bulk memorize at 0.81 of the model's speed).
            order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if len(texts) > self._max_batch else None
            chars = self._chars_per_call(queue)
            start = 0
            while start < len(texts):
                end = min(start + self._max_batch, len(texts))
                positions: Sequence[int] = range(start, end) if order is None else order[start:end]
                if chars is not None:
                    positions = _within(positions, texts, chars)
                queue.append(_Piece(request, positions, [texts[i] for i in positions]))
                start += len(positions)
            # Every thread looks: some serve only some lanes, and a wake-up taken by one that has
            # nothing to do here would be lost to the others.
            self._wake.notify_all()
        return request.done

    def _served_by(self, background: bool) -> list[tuple[deque[_Piece], Callable[[Sequence[str]], list[list[float]]]]]:
        """The lanes a thread serves: documents only in the background, the others elsewhere when
        there are background threads, else all."""
        if self._background is None:
            return list(self._lanes)
        return [(queue, embed) for queue, embed in self._lanes if (queue is self._documents) == background]

    def _next_batch(
        self, background: bool = False
    ) -> tuple[Callable[[Sequence[str]], list[list[float]]], list[_Piece]] | None:
        """The next pieces to embed (queries first, documents last) and the call that embeds them,
        or None once closed and drained."""
        with self._wake:
            while not any(queue for queue, _ in self._served_by(background)):
                if self._closed:
                    return None
                self._idle[background] += 1
                self._wake.wait()
                self._idle[background] -= 1
            queue, embed = next((queue, embed) for queue, embed in self._served_by(background) if queue)
            limit = self._max_batch
            idle = self._idle[background]
            if idle:
                # Other threads of this lane are free: leave them their share of what is queued (a
                # document thread never takes a query, so it does not count for one).
                queued = sum(len(piece.texts) for piece in queue)
                limit = min(limit, -(-queued // (idle + 1)))
            chars = self._chars_per_call(queue)
            batch = [queue.popleft()]
            size, held = len(batch[0].texts), _chars(batch[0].texts)
            while queue and size + len(queue[0].texts) <= limit:
                if chars is not None and held + _chars(queue[0].texts) > chars:
                    break
                piece = queue.popleft()
                batch.append(piece)
                size, held = size + len(piece.texts), held + _chars(piece.texts)
            return embed, batch

    def _chars_per_call(self, queue: deque[_Piece]) -> int | None:
        """The bound on characters a call of ``queue``'s lane embeds: documents, where every call
        uses one core; else none."""
        return DOCUMENT_CHARS_PER_CALL if queue is self._documents and self.threads > 1 else None

    @property
    def threads(self) -> int:
        """How many model threads serve queries and memories (document threads aside)."""
        return len(self._threads) // 2 if self._background is not None else len(self._threads)

    def _serve(self, background: bool) -> None:
        if background and self._background is not None:
            self._background()
        while (work := self._next_batch(background)) is not None:
            self._embed(*work)
            # Nothing of the batch may outlive it here: an idle thread holding its last request
            # kept that request's every vector (a whole document's: 76 MB for 6,382 chunks).
            del work

    def _embed(self, embed: Callable[[Sequence[str]], list[list[float]]], batch: list[_Piece]) -> None:
        """Embed ``batch`` and hand each piece's vectors to its request."""
        live = [p for p in batch if not p.request.done.done()]  # a failed request's other pieces
        if not live:
            return
        texts = [t for p in live for t in p.texts]
        self.observer.embed_batch(getattr(embed, "__name__", "embed").removeprefix("embed_"), len(texts))
        try:
            vectors = embed(texts)
            if len(vectors) != len(texts):
                raise EmbeddingError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
        except Exception as exc:  # every caller of the batch hears of it; the thread goes on
            log.debug("embedding a batch of %d texts failed: %s", len(texts), exc)
            for piece in live:
                if not piece.request.done.done():
                    piece.request.done.set_exception(exc)
            return
        offset = 0
        for piece in live:
            request = piece.request
            for position in piece.positions:
                request.vectors[position] = vectors[offset]
                offset += 1
            request.missing -= len(piece.texts)
            if request.missing == 0:
                request.done.set_result(request.vectors)
