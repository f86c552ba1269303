"""The embedded shape's sleep: a daemon thread that consolidates each scope once per interval.

The distributed shape has beat schedule the same pass on the ``consolidate`` queue. The first
check waits ``startup_delay_s`` (a server that starts answers first); then one check per hour at
most. A pass that fails is logged and tried again at the next check; none ever blocks a request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta

from hivemem.embedding import Embedder
from hivemem.model import utcnow
from search.base import Store
from workers.lifecycle import SleepPolicy, sleep_due

__all__ = ["SleepTimer"]

log = logging.getLogger(__name__)


class SleepTimer:
    """Runs :func:`workers.lifecycle.sleep_due` in the background until ``stop``."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        policy: SleepPolicy,
        interval: timedelta,
        *,
        startup_delay_s: float = 60.0,
        lock: Callable[[], AbstractContextManager[bool]] = lambda: nullcontext(True),
    ) -> None:
        """``lock``: entered around each check, it says whether this process may sleep the store
        now (:func:`workers.sleep_lock.sleep_lock`; the default: it is the store's only sleeper)."""
        self._store, self._embedder, self._policy, self._interval = store, embedder, policy, interval
        self._startup_delay_s = startup_delay_s
        self._lock = lock
        self._stopped = threading.Event()
        self.passes = 0  # checks completed, for tests and diagnostics
        self._thread = threading.Thread(target=self._loop, name="hivemem-sleep", daemon=True)

    def start(self) -> None:
        """Start the thread; returns at once."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the pass in progress, if any."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        wait = self._startup_delay_s
        check_every = min(self._interval.total_seconds(), 3600.0)
        while not self._stopped.wait(wait):
            try:
                with self._lock() as held:
                    # Not held: another process sleeps the store now, and the scopes it sleeps
                    # are not due at the next check.
                    if held:
                        self._sleep_due()
            except Exception:  # the next check tries again
                log.exception("a sleep pass failed")
            self.passes += 1
            wait = check_every

    def _sleep_due(self) -> None:
        for report in sleep_due(self._store, self._embedder, utcnow(), self._policy, self._interval):
            if report.consolidations or report.archived:
                log.info(
                    "sleep: %s: %d insight(s), %d archived",
                    report.scope,
                    len(report.consolidations),
                    len(report.archived),
                )
