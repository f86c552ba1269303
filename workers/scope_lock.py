"""Per-scope serialization of the resolve step: a Redis lock per scope.

Why a lock and not one ordered lane per scope: lanes need a fixed set of queues, a hash from
scope to lane and exactly one consumer per lane, so adding a worker does not add resolve capacity
and a slow scope stalls every scope hashed to its lane. A lock lets any number of workers resolve
different scopes in parallel and serializes only writers of the same scope, which is the one
place order matters (dedup and contradiction checks read the scope, then write it).

The lock expires after ``HIVEMEM_RESOLVE_LOCK_TIMEOUT_S``: a worker killed while holding it blocks
its scope for at most that long. The store's own ``write_resolved`` stays atomic as well, so even
a lock that expired under a very slow writer cannot produce a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from hashlib import sha1
from typing import TYPE_CHECKING

from hivemem.errors import BrokerUnavailableError, JobError

if TYPE_CHECKING:
    import redis

__all__ = ["ScopeBusyError", "scope_locks"]


class ScopeBusyError(JobError):
    """Another worker held a scope's resolve lock for too long; the task is retried later."""


def _lock_name(scope: str) -> str:
    # Scopes are free text: hash them into a key of bounded size and alphabet.
    return "hivemem:lock:resolve:" + sha1(scope.encode("utf-8"), usedforsecurity=False).hexdigest()


@contextmanager
def scope_locks(client: redis.Redis, scopes: Iterable[str], *, timeout_s: int, wait_s: float) -> Iterator[None]:
    """Hold the resolve lock of every scope in ``scopes`` for the block.

    Locks are taken in a fixed (sorted) order, so two tasks that touch the same scopes cannot
    deadlock. Raises ``ScopeBusyError`` when a lock is not free within ``wait_s``.
    """
    import redis as redis_lib

    with ExitStack() as held:
        for scope in sorted(set(scopes)):
            # Poll every 5 ms, not redis-py's default 100 ms: a resolve holds the lock for a few
            # milliseconds, so a waiter that sleeps 100 ms mostly waits for nothing.
            lock = client.lock(
                _lock_name(scope), timeout=timeout_s, sleep=0.005, blocking_timeout=wait_s, thread_local=False
            )
            try:
                acquired = lock.acquire()
            except redis_lib.RedisError as exc:
                raise BrokerUnavailableError(f"cannot take the resolve lock: {exc}") from exc
            if not acquired:
                raise ScopeBusyError(f"scope {scope!r} stayed locked for {wait_s:.0f}s")
            held.callback(_release, lock)
        yield


def _release(lock: redis.lock.Lock) -> None:
    import redis as redis_lib

    # It expired while held (a very slow write): another writer may hold it now, leave theirs.
    with suppress(redis_lib.exceptions.LockError):
        lock.release()
