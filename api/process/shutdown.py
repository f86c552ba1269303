"""Graceful shutdown: SIGTERM (what containers, systemd and test runners send) ends a process as
cleanly as Ctrl-C, with its queued background writes finished and its store closed, and exit 0.

Python's defaults differ: SIGINT raises ``KeyboardInterrupt``, which unwinds ``finally`` blocks,
but SIGTERM kills the process on the spot. uvicorn stops gracefully on both, then raises the
signal again with the handler it found installed, so that one must not be the default either.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["STOP_SIGNALS", "sigterm_as_sigint", "stopping_on_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stopping_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM call ``stop`` (which asks the work to end) instead of
    killing the process; the previous handlers come back afterwards. Outside the main thread,
    where handlers cannot be installed, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        stop()

    previous = {sig: signal.signal(sig, handle) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def sigterm_as_sigint() -> Iterator[None]:
    """Within the block, SIGTERM does what Ctrl-C does. For an asyncio program, whose runner turns
    SIGINT into a cancellation of its main task (and ``KeyboardInterrupt`` once it has unwound),
    so the shutdown runs at a point of the loop's choosing, not wherever the signal lands."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: FrameType | None) -> None:
        signal.raise_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
