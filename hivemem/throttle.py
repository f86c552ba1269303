"""Counting requests per key (a token, a client address) in a sliding one-minute window.

Two uses on the team server: a rate limit per token, and a lock-out of an address that sends bad
tokens (brute force). Pure: the caller passes the time, so tests need no clock.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque

__all__ = ["Throttle"]

# Keys held at most (least recently seen dropped first), so a flood of new addresses cannot grow
# memory without bound; a dropped key starts its count again.
MAX_KEYS = 100_000


class Throttle:
    """At most ``limit`` events per key within ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float = 60.0) -> None:
        self.limit = limit
        self.window_s = window_s
        self._events: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        events = self._events.get(key)
        if events is None:
            events = self._events[key] = deque()
            while len(self._events) > MAX_KEYS:
                self._events.popitem(last=False)
        else:
            self._events.move_to_end(key)
        while events and events[0] <= now - self.window_s:
            events.popleft()
        return events

    def _wait(self, events: deque[float], now: float) -> int:
        """Seconds until the oldest of ``events`` leaves the window, if they fill it; else 0."""
        if len(events) < self.limit:
            return 0
        return max(1, math.ceil(events[0] + self.window_s - now))

    def blocked_for(self, key: str, now: float) -> int:
        """Seconds until ``key`` may act again (0: it may now), without counting an event."""
        with self._lock:
            return self._wait(self._recent(key, now), now)

    def record(self, key: str, now: float) -> None:
        """Count one event of ``key`` at ``now``."""
        with self._lock:
            self._recent(key, now).append(now)

    def take(self, key: str, now: float) -> int:
        """Count one event if ``key`` is under its limit and return 0; else the seconds to wait."""
        with self._lock:
            events = self._recent(key, now)
            wait = self._wait(events, now)
            if not wait:
                events.append(now)
            return wait
