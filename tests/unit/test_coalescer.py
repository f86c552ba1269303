"""Continuous batching: calls arriving while a batch runs share the next one; errors reach each caller."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from hivemem.coalescer import Coalescer


def test_a_lone_call_runs_at_once_and_alone() -> None:
    batches: list[list[int]] = []

    def run(key: str, items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        return [i * 2 for i in items]

    assert Coalescer(run).submit("k", 21) == 42
    assert batches == [[21]]


def test_calls_arriving_during_a_batch_go_together_each_with_its_own_result() -> None:
    first_started, release = threading.Event(), threading.Event()
    batches: list[tuple[str, list[int]]] = []

    def run(key: str, items: Sequence[int]) -> list[str]:
        batches.append((key, list(items)))
        if items == [0]:
            first_started.set()
            release.wait()
        return [f"{key}{i}" for i in items]

    coalescer: Coalescer[str, int, str] = Coalescer(run)
    with ThreadPoolExecutor(max_workers=12) as pool:
        first = pool.submit(coalescer.submit, "a", 0)
        first_started.wait()
        later = [pool.submit(coalescer.submit, "a" if i % 2 else "b", i) for i in range(1, 11)]
        # Wait for the condition itself: all ten calls are queued behind the running batch.
        while len(coalescer._pending) < 10:
            threading.Event().wait(0.001)
        release.set()
        assert first.result() == "a0"
        assert [f.result() for f in later] == [f"{'a' if i % 2 else 'b'}{i}" for i in range(1, 11)]
    assert batches[0] == ("a", [0])
    assert sorted(len(items) for _, items in batches[1:]) == [5, 5]  # one batch per key


def test_an_error_reaches_every_call_of_its_batch_and_the_next_batch_still_runs() -> None:
    gate = threading.Event()

    def run(key: str, items: Sequence[int]) -> list[int]:
        if key == "slow":
            gate.wait()
            return list(items)
        raise ValueError(f"bad batch {sorted(items)}")

    coalescer: Coalescer[str, int, int] = Coalescer(run)
    with ThreadPoolExecutor(max_workers=4) as pool:
        slow = pool.submit(coalescer.submit, "slow", 1)
        while not coalescer._running:
            threading.Event().wait(0.001)
        failing = [pool.submit(coalescer.submit, "bad", i) for i in (2, 3)]
        while len(coalescer._pending) < 2:
            threading.Event().wait(0.001)
        gate.set()
        assert slow.result() == 1
        for future in failing:
            with pytest.raises(ValueError, match=r"bad batch \[2, 3\]"):
                future.result()
    assert coalescer.submit("slow", 9) == 9
