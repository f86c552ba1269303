"""Per-scope serialization of the resolve step: a Redis lock per scope.

Why a lock and not one ordered lane per scope: lanes need a fixed set of queues, a hash from
scope to lane and exactly one consumer per lane, so adding a worker does not add resolve capacity
and a slow scope stalls every scope hashed to its lane. A lock lets any number of workers resolve
different scopes in parallel and serializes only writers of the same scope, which is the one
place order matters (dedup and contradiction checks read the scope, then write it).

A held lock is a lease of :data:`LEASE_S`, renewed every :data:`RENEW_EVERY_S` by a thread of the
holder for as long as the block runs: a worker killed while holding it (``kill -9``, a lost node)
stops renewing, and its scope is free again within :data:`LEASE_S`, while a live writer slower than
that keeps its lock. A waiter gives up after ``wait_s`` (``HIVEMEM_RESOLVE_LOCK_TIMEOUT_S``) and the
task is retried. The store's own ``write_resolved`` stays atomic as well, so even a lease lost
under a stalled writer (a process paused past :data:`LEASE_S`) cannot produce a duplicate.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from hashlib import sha1
from typing import TYPE_CHECKING

from hivemem.errors import BrokerUnavailableError, JobError

if TYPE_CHECKING:
    import redis

__all__ = ["LEASE_S", "RENEW_EVERY_S", "ScopeBusyError", "scope_locks"]

# How long a dead holder can block its scope. Short, because the holder renews it: a resolve
# holds the lock for milliseconds, and a renewal every second leaves four missed ones of slack.
LEASE_S = 5
RENEW_EVERY_S = 1.0


class ScopeBusyError(JobError):
    """Another worker held a scope's resolve lock for too long; the task is retried later."""


def _lock_name(scope: str) -> str:
    # Scopes are free text: hash them into a key of bounded size and alphabet.
    return "hivemem:lock:resolve:" + sha1(scope.encode("utf-8"), usedforsecurity=False).hexdigest()


@contextmanager
def scope_locks(client: redis.Redis, scopes: Iterable[str], *, wait_s: float) -> Iterator[None]:
    """Hold the resolve lock of every scope in ``scopes`` for the block, renewing their leases.

    Locks are taken in a fixed (sorted) order, so two tasks that touch the same scopes cannot
    deadlock. Raises ``ScopeBusyError`` when a lock is not free within ``wait_s``.
    """
    import redis as redis_lib

    with ExitStack() as held:
        locks: list[redis.lock.Lock] = []
        for scope in sorted(set(scopes)):
            # Poll every 5 ms, not redis-py's default 100 ms: a resolve holds the lock for a few
            # milliseconds, so a waiter that sleeps 100 ms mostly waits for nothing.
            lock = client.lock(
                _lock_name(scope), timeout=LEASE_S, sleep=0.005, blocking_timeout=wait_s, thread_local=False
            )
            try:
                acquired = lock.acquire()
            except redis_lib.RedisError as exc:
                raise BrokerUnavailableError(f"cannot take the resolve lock: {exc}") from exc
            if not acquired:
                raise ScopeBusyError(f"scope {scope!r} stayed locked for {wait_s:.0f}s")
            held.callback(_release, lock)
            locks.append(lock)
        stop = threading.Event()
        renewer = threading.Thread(target=_renew, args=(locks, stop), name="hivemem-scope-lock-renewer", daemon=True)
        renewer.start()
        held.callback(renewer.join)
        held.callback(stop.set)
        yield


def _renew(locks: list[redis.lock.Lock], stop: threading.Event) -> None:
    """Reset each lease to :data:`LEASE_S` every :data:`RENEW_EVERY_S` until ``stop``."""
    import redis as redis_lib

    while not stop.wait(RENEW_EVERY_S):
        for lock in locks:
            # A lease lost meanwhile (Redis restarted, the process was paused past LEASE_S) is not
            # taken back: another writer may hold it; the store's atomic write still guards.
            with suppress(redis_lib.RedisError, redis_lib.exceptions.LockError):
                lock.reacquire()


def _release(lock: redis.lock.Lock) -> None:
    import redis as redis_lib

    # It expired while held (a stalled writer): another writer may hold it now, leave theirs.
    with suppress(redis_lib.exceptions.LockError):
        lock.release()
