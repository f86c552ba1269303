"""The per-scope resolve lock: a dead holder frees its scope in seconds, a live one keeps it.

A real ``redis-server`` and a real holder process, killed with SIGKILL while it holds the lock.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import redis

from workers import scope_lock
from workers.scope_lock import LEASE_S, ScopeBusyError, _lock_name, scope_locks

SCOPE = "github.com/acme/locked"

HOLDER = """
import sys, time, redis
from workers.scope_lock import scope_locks
client = redis.Redis.from_url(sys.argv[1])
with scope_locks(client, [sys.argv[2]], wait_s=5):
    client.set("holder:ready", "1")
    time.sleep(3600)
"""


def test_a_holder_killed_with_the_lock_frees_its_scope_within_the_lease(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, redis_url, SCOPE])
    try:
        while client.get("holder:ready") is None:
            assert holder.poll() is None, "the holder exited before it took the lock"
            time.sleep(0.01)
        # The holder renews its lease: held past a lease, the lock is still its own.
        ttl_before = client.pttl(_lock_name(SCOPE))
        assert 0 < ttl_before <= LEASE_S * 1000
        holder.kill()
        holder.wait()
        killed_at = time.monotonic()
        # Before: the lock lived HIVEMEM_RESOLVE_LOCK_TIMEOUT_S (60 s) after its holder died, and a
        # waiter gave up after as long; now it lapses within one lease.
        with scope_locks(client, [SCOPE], wait_s=3 * LEASE_S):
            taken_after_s = time.monotonic() - killed_at
        assert taken_after_s <= 3 * LEASE_S
    finally:
        holder.kill()
        holder.wait()


def test_a_live_holder_slower_than_the_lease_keeps_its_lock(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A short lease, renewed ten times within it, so the test runs in seconds and a busy machine
    # would have to stall the renewer for the whole lease to lose it.
    monkeypatch.setattr(scope_lock, "LEASE_S", 2)
    monkeypatch.setattr(scope_lock, "RENEW_EVERY_S", 0.2)
    client = redis.Redis.from_url(redis_url)
    holding = threading.Event()
    done = threading.Event()

    def hold() -> None:
        with scope_locks(client, [SCOPE], wait_s=5):
            holding.set()
            done.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        # A waiter for two leases finds it still held: the holder outlived its lease by renewing.
        with pytest.raises(ScopeBusyError, match="stayed locked"), scope_locks(client, [SCOPE], wait_s=4):
            pass
    finally:
        done.set()
        holder.join()
    # Released on exit: the next writer takes it at once, and no renewal outlives the block.
    with scope_locks(client, [SCOPE], wait_s=1):
        pass
    assert client.exists(_lock_name(SCOPE)) == 0
