"""The search gate: at most so many inside, the others admitted in the order they came."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from hivemem.admission import AdmissionTuning, FairGate, search_gate_for
from hivemem.config import Settings

WAIT_S = 10


def _until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition`` itself (no fixed sleep); fail after WAIT_S."""
    pause = threading.Event()
    for _ in range(WAIT_S * 1000):
        if condition():
            return
        pause.wait(0.001)
    raise AssertionError("condition not reached")


def test_no_more_than_the_slots_are_inside_at_once() -> None:
    gate = FairGate(2)
    release = threading.Event()
    active = most = 0
    count = threading.Lock()

    def search() -> None:
        nonlocal active, most
        with gate.held():
            with count:
                active += 1
                most = max(most, active)
            release.wait(WAIT_S)
            with count:
                active -= 1

    threads = [threading.Thread(target=search) for _ in range(5)]
    for thread in threads:
        thread.start()
    _until(lambda: active == 2 and gate.waiting == 3)  # two inside, three queued
    release.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(t.is_alive() for t in threads)
    assert most == 2
    assert gate.holders == 0 and gate.waiting == 0


def test_waiters_are_admitted_in_the_order_they_came() -> None:
    gate = FairGate(1)
    order: list[int] = []
    release = threading.Event()

    def first() -> None:
        with gate.held():
            release.wait(WAIT_S)

    def later(n: int) -> None:
        with gate.held():
            order.append(n)

    holder = threading.Thread(target=first)
    holder.start()
    _until(lambda: gate.holders == 1)
    waiters = []
    for n in range(6):
        thread = threading.Thread(target=later, args=(n,))
        thread.start()
        waiters.append(thread)
        _until(lambda n=n: gate.waiting == n + 1)  # each queued before the next one comes
    release.set()
    for thread in [holder, *waiters]:
        thread.join(WAIT_S)
    assert order == [0, 1, 2, 3, 4, 5]


def test_a_failure_inside_frees_the_slot() -> None:
    gate = FairGate(1)
    with pytest.raises(RuntimeError), gate.held():
        raise RuntimeError("inside")
    assert gate.holders == 0
    with gate.held():
        assert gate.holders == 1


def test_the_default_is_one_more_than_the_cores_and_a_gate_needs_a_slot() -> None:
    remote = "opensearch+http://127.0.0.1:9200"
    local = search_gate_for(Settings(), AdmissionTuning(search_concurrency=0))
    configured = search_gate_for(Settings(store_url=remote), AdmissionTuning(search_concurrency=7))
    assert local is not None and local.slots == (os.cpu_count() or 1) + 1
    assert configured is not None and configured.slots == 7
    # A remote store's searches wait on the cluster.
    assert search_gate_for(Settings(store_url=remote), AdmissionTuning(search_concurrency=0)) is None
    with pytest.raises(ValueError):
        FairGate(0)
