"""Continuous batching in the callers' threads: calls that arrive while a batch runs go together next.

A vector search over a large matrix is bound by reading the matrix, so sixteen queries scored in
one matrix-matrix product cost little more than one. Nothing waits for a window: a call that finds
nothing running runs at once (alone, when it is alone); calls arriving meanwhile queue, and when the
running batch ends, the first of them leads the next batch with every queued call of the same key.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

__all__ = ["Coalescer"]

K = TypeVar("K", bound=Hashable)
I = TypeVar("I")  # noqa: E741 - the conventional name of an item type
R = TypeVar("R")


class _Call(Generic[K, I, R]):
    __slots__ = ("done", "error", "item", "key", "leads", "result", "wake")

    def __init__(self, key: K, item: I) -> None:
        self.key, self.item = key, item
        self.wake = threading.Event()
        self.leads = False
        self.done = False
        self.result: R | None = None
        self.error: BaseException | None = None


class Coalescer(Generic[K, I, R]):
    """Runs ``run(key, items)`` over calls of one key gathered from many threads; thread-safe.

    ``run`` must return one result per item, in order; what it raises is raised in every call of
    that batch. At most ``max_items`` calls go in one batch.
    """

    def __init__(self, run: Callable[[K, Sequence[I]], Sequence[R]], *, max_items: int = 64) -> None:
        self._run = run
        self._max_items = max(1, max_items)
        self._lock = threading.Lock()
        self._pending: list[_Call[K, I, R]] = []
        self._running = False

    def submit(self, key: K, item: I) -> R:
        """``run``'s result for ``item``, computed alone or in a batch with others of ``key``."""
        call: _Call[K, I, R] = _Call(key, item)
        with self._lock:
            self._pending.append(call)
            if not self._running:
                self._running = call.leads = True
        while not call.leads and not call.done:
            call.wake.wait()
            call.wake.clear()
        if not call.done:
            self._lead(call)
        if call.error is not None:
            raise call.error
        return call.result  # type: ignore[return-value]

    def _lead(self, leader: _Call[K, I, R]) -> None:
        with self._lock:
            batch = [c for c in self._pending if c.key == leader.key][: self._max_items]
            taken = {id(c) for c in batch}
            self._pending = [c for c in self._pending if id(c) not in taken]
        try:
            results = self._run(leader.key, [c.item for c in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"batch of {len(batch)} answered with {len(results)} results")
        except BaseException as exc:  # every caller of the batch must hear of it
            for c in batch:
                c.error = exc
        else:
            for c, result in zip(batch, results, strict=True):
                c.result = result
        with self._lock:
            for c in batch:
                c.done = True
                if c is not leader:
                    c.wake.set()
            if self._pending:
                successor = self._pending[0]
                successor.leads = True
                successor.wake.set()
            else:
                self._running = False
