"""Admission of searches: at most so many run at once, the others wait their turn in arrival order.

Why: a recall is a query embedding (on the model's threads) plus Python work (legs, fusion,
reading rows) under one interpreter lock. Sixteen recalls at once on two cores do not finish
sooner than three at a time: they take turns on the lock and the cores' caches, and each costs
about a third more CPU (measured: 23 ms a recall with sixteen in flight against 17 ms alone, so
66 recalls/s; admitting cores + 1 at a time, 100–110/s with a p95 of about 190 ms). One more
than the cores keeps a recall doing Python work while others wait for the model.

With OpenSearch the searches run on the cluster and recall mostly waits on the network, so no
gate is set unless one is configured.

The order is first come, first served: a slot freed is handed to the oldest waiter, so no
request waits behind later ones (an unfair semaphore let some wait for seconds under load).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import ClassVar

from pydantic import Field

from hivemem.config import Settings
from hivemem.tuning import Tuning

__all__ = ["AdmissionTuning", "FairGate", "admitted", "search_gate_for"]


class AdmissionTuning(Tuning):
    """How many searches of one process run at once."""

    group_title: ClassVar[str] = "Search admission"

    search_concurrency: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Searches (recalls and knowledge searches) run at once in one process; the others wait their "
        "turn in arrival order. 0: one more than the cores with the SQLite store (about half again as many recalls "
        "per second under load as letting every request in), no limit with OpenSearch (searches wait on the cluster).",
    )


def search_gate_for(settings: Settings, tuning: AdmissionTuning | None = None) -> FairGate | None:
    """The gate of a process's searches: ``search_concurrency`` at once. For 0: one more than the
    cores when the store searches on this machine's cores (SQLite), none when it searches remotely
    (OpenSearch: a recall there mostly waits on the cluster, and a few slots would idle the gateway)."""
    concurrency = (tuning or AdmissionTuning()).search_concurrency
    if concurrency:
        return FairGate(concurrency)
    in_process = settings.resolved_store_url().startswith("sqlite")
    return FairGate((os.cpu_count() or 1) + 1) if in_process else None


def admitted(gate: FairGate | None) -> AbstractContextManager[None]:
    """A slot of ``gate`` held for the block; no wait when there is no gate."""
    return gate.held() if gate is not None else nullcontext()


class FairGate:
    """At most ``slots`` holders at a time; the others are admitted in the order they came."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a gate needs at least one slot")
        self.slots = slots
        self._holders = 0
        self._waiting: deque[threading.Event] = deque()
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        """How many are waiting for a slot now."""
        with self._lock:
            return len(self._waiting)

    @property
    def holders(self) -> int:
        """How many hold a slot now."""
        with self._lock:
            return self._holders

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold a slot for the block, waiting for it in turn; released however the block ends."""
        with self._lock:
            if self._holders < self.slots and not self._waiting:
                self._holders += 1
                turn = None
            else:
                turn = threading.Event()
                self._waiting.append(turn)
        if turn is not None:
            try:
                turn.wait()  # the slot is handed over by the holder that leaves; the count stays
            except BaseException:  # interrupted while waiting: leave the queue, or pass on a slot handed over
                with self._lock:
                    if turn in self._waiting:
                        self._waiting.remove(turn)
                        raise
                self._release()
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._holders -= 1
