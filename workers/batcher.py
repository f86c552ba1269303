"""Micro-batching: memorize calls that arrive together are queued as one ``embed`` task.

An embedder encodes 32 texts in little more time than one, so under concurrent load one task per
window instead of one per call multiplies what an embed worker (above all a GPU one) gets done.
The first call of a window waits ``window_s``, then sends everything that arrived meanwhile;
calls never wait longer than one window, and a window of 0 sends each call at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

__all__ = ["MicroBatcher"]


class MicroBatcher:
    """Collects items from many threads and hands them to ``send`` in batches of at most ``max_items``."""

    def __init__(self, send: Callable[[list[Any]], None], *, window_s: float, max_items: int) -> None:
        self._send = send
        self._window_s = window_s
        self._max_items = max(1, max_items)
        self._lock = threading.Lock()
        self._pending: list[tuple[Any, Future[None]]] = []
        self._leader = False

    def submit(self, item: Any) -> None:
        """Hand ``item`` over; returns once it is sent, raising what ``send`` raised for its batch."""
        sent: Future[None] = Future()
        with self._lock:
            self._pending.append((item, sent))
            lead = not self._leader
            self._leader = True
        if lead:
            if self._window_s > 0:
                time.sleep(self._window_s)
            self._flush()
        sent.result()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._leader = False
        for start in range(0, len(batch), self._max_items):
            self._send_batch(batch[start : start + self._max_items])

    def _send_batch(self, batch: Sequence[tuple[Any, Future[None]]]) -> None:
        try:
            self._send([item for item, _ in batch])
        except Exception as exc:
            for _, sent in batch:
                sent.set_exception(exc)
        else:
            for _, sent in batch:
                sent.set_result(None)
