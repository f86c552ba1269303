"""The micro-batcher: concurrent calls within one window travel as one batch; errors reach every caller."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from workers.batcher import MicroBatcher


def submit_at_once(batcher: MicroBatcher, count: int) -> None:
    """``count`` threads submit 0..count-1, released together."""
    start = threading.Barrier(count)

    def submit(i: int) -> None:
        start.wait()
        batcher.submit(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        list(pool.map(submit, range(count)))


def test_concurrent_submissions_within_a_window_are_sent_together() -> None:
    batches: list[list[int]] = []
    lock = threading.Lock()

    def send(items: list[int]) -> None:
        with lock:
            batches.append(items)

    submit_at_once(MicroBatcher(send, window_s=0.2, max_items=100), 16)
    assert sorted(i for batch in batches for i in batch) == list(range(16))
    assert len(batches) < 16  # the 16 calls shared batches instead of one send each


def test_batches_never_exceed_max_items() -> None:
    batches: list[list[int]] = []
    submit_at_once(MicroBatcher(batches.append, window_s=0.2, max_items=3), 10)
    assert all(len(batch) <= 3 for batch in batches)
    assert sorted(i for batch in batches for i in batch) == list(range(10))


def test_a_zero_window_sends_each_call_alone() -> None:
    batches: list[list[str]] = []
    batcher = MicroBatcher(batches.append, window_s=0, max_items=32)
    batcher.submit("a")
    batcher.submit("b")
    assert batches == [["a"], ["b"]]


def test_a_failed_send_raises_in_every_caller_of_the_batch() -> None:
    def send(items: list[int]) -> None:
        raise ConnectionError("broker down")

    batcher = MicroBatcher(send, window_s=0.1, max_items=32)
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def submit(i: int) -> None:
        start.wait()
        with pytest.raises(ConnectionError, match="broker down") as caught:
            batcher.submit(i)
        errors.append(caught.value)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(submit, range(4)))
    assert len(errors) == 4
