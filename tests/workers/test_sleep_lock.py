"""One sleep pass at a time among the processes of one embedded store (workers.sleep_lock)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.model import MemoryState
from search import SearchFilter, Store, open_store
from workers.lifecycle import last_sleep, sleep_policy
from workers.sleep_lock import sleep_lock
from workers.sleep_timer import SleepTimer

from .test_lifecycle_jobs import TWINS, write

REPO = Path(__file__).resolve().parents[2]
HOLD = """
import sys
from pathlib import Path
from workers.sleep_lock import sleep_lock
with sleep_lock(Path(sys.argv[1]), wait=False) as held:
    print(held, flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def store(tmp_path: Path, embedder: HashEmbedder) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'hive.db'}", embedding_model=embedder.model_id, dimension=64)
    yield opened
    opened.close()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process (a second stdio session, say) holding the lock of the store in tmp_path."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "True"  # it holds the lock now
    try:
        yield process
    finally:
        process.kill()
        process.communicate()


def test_a_process_holding_the_lock_keeps_the_others_out_until_it_ends(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    with sleep_lock(tmp_path, wait=False) as held:
        assert held is False
    holder.communicate("")  # it ends its pass and exits
    with sleep_lock(tmp_path, wait=False) as held:
        assert held is True
        with sleep_lock(tmp_path, wait=False) as also:  # another thread of this process
            assert also is False


def test_a_process_killed_mid_pass_leaves_the_lock_free(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with sleep_lock(tmp_path, wait=True) as held:
        assert held is True


def wait_for_checks(timer: SleepTimer, count: int) -> None:
    deadline = time.monotonic() + 300
    while timer.passes < count:  # the condition itself: the checks completed
        assert time.monotonic() < deadline, "the sleep timer never completed its check"
        time.sleep(0.01)


def test_a_timer_leaves_the_store_to_the_process_sleeping_it(
    tmp_path: Path, store: Store, embedder: HashEmbedder
) -> None:
    for text in TWINS:
        write(store, embedder, "team/a", text)
    policy, day = replace(sleep_policy(), window_days=3650), timedelta(hours=24)
    every = SearchFilter(scopes=["team/a"], states=tuple(MemoryState))
    with sleep_lock(tmp_path, wait=False) as held:
        assert held
        timer = SleepTimer(
            store, embedder, policy, day, startup_delay_s=0, lock=lambda: sleep_lock(tmp_path, wait=False)
        )
        timer.start()
        wait_for_checks(timer, 1)
        timer.stop()
    assert last_sleep(store, "team/a") is None  # it did not sleep the scope another holds
    assert {m.state for m in store.list_memories(every, 10)} == {MemoryState.WORKING}

    timer = SleepTimer(store, embedder, policy, day, startup_delay_s=0, lock=lambda: sleep_lock(tmp_path, wait=False))
    timer.start()
    wait_for_checks(timer, 1)
    timer.stop()
    assert last_sleep(store, "team/a") is not None
    kinds = sorted((m.memory_type.value, m.state.value) for m in store.list_memories(every, 10))
    assert kinds == [("fact", "consolidated")] * 3 + [("insight", "working")]
