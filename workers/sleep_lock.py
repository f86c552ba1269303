"""One sleep pass at a time among the processes that share an embedded store.

In the embedded shape every process that serves opens the store and runs a sleep timer:
``hivemem serve``, and one ``hivemem mcp`` per agent session (an editor with three sessions open
runs three). Each looks up when a scope last slept before sleeping it, but two that look while the
other's pass is still running both sleep it: one cluster consolidated twice into two insights, each
archiving done and audited twice. The distributed shape serialises its passes with a Redis lock
(``workers.tasks``); here the lock is a file in the data folder, held with ``flock``, which the
kernel releases when the block ends or its process dies, so a crashed pass never holds it. Two
threads of one process exclude each other too: each opens the file on its own.

With a broker, the workers' scheduled pass and a pass asked of a gateway share a Redis lock
instead (:func:`redis_sleep_lock`); it expires after an hour, so a worker that died holding it
holds it no longer than that. Without one, an OpenSearch store, which processes on several
machines may serve, holds the lock itself (``search.capabilities.LeasesSleep``, a lease document in the
cluster): a file lock covers the processes of one machine only.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from hivemem.errors import BrokerUnavailableError
from search.capabilities import SLEEP_LOCK_S

if TYPE_CHECKING:
    import redis

__all__ = ["REDIS_SLEEP_LOCK", "broker_sleep_lock", "redis_sleep_lock", "sleep_lock"]

LOCK_NAME = "sleep.lock"
REDIS_SLEEP_LOCK = "hivemem:lock:sleep"


@contextmanager
def sleep_lock(data_dir: Path, *, wait: bool) -> Iterator[bool]:
    """Whether the block holds the lock of the store in ``data_dir``: with ``wait``, always, once
    another pass has ended; without, only if no pass runs now (False: another process is sleeping
    the store, so this one has nothing to do)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / LOCK_NAME).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def redis_sleep_lock(client: redis.Redis, *, wait: bool) -> Iterator[bool]:
    """As :func:`sleep_lock`, for the processes of one broker (workers and gateways)."""
    lock = client.lock(REDIS_SLEEP_LOCK, timeout=SLEEP_LOCK_S)
    if not lock.acquire(blocking=wait):
        yield False
        return
    try:
        yield True
    finally:
        with suppress(Exception):  # expired meanwhile (a pass over an hour): nothing left to release
            lock.release()


@contextmanager
def broker_sleep_lock(broker_url: str, *, wait: bool) -> Iterator[bool]:
    """:func:`redis_sleep_lock` on a connection of its own to ``broker_url`` (a pass asked of a
    gateway). Raises ``BrokerUnavailableError`` when the broker cannot be reached."""
    import redis

    with redis.Redis.from_url(broker_url) as client:
        try:
            client.ping()  # unreachable: said now, in the words the job board uses
        except redis.RedisError as exc:
            raise BrokerUnavailableError(f"the job broker is unreachable: {exc}") from exc
        with redis_sleep_lock(client, wait=wait) as held:
            yield held
