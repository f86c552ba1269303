"""Which worker holds which task, and handing a dead worker's tasks to the others within seconds.

With late acks, a task a worker has taken sits in the broker's unacknowledged hash until the
worker acknowledges it. When the whole worker dies (kill -9, a lost machine), nobody does, and
kombu hands the task out again only after the visibility timeout: an hour by default, during
which an agent's `remember` cannot find what it was told was stored. So:

- each worker keeps a heartbeat key alive (``hivemem:alive:<node>``, refreshed every
  ``HEARTBEAT_S``, expiring after ``ALIVE_S``);
- each task a worker receives is recorded as held by it (``hivemem:held``: task id → node);
- every ``SWEEP_S`` one live worker (a short lock) looks at the held tasks: a task whose node
  has no heartbeat is put back on its queue from the unacknowledged hash (kombu's own restore,
  redelivered flag and priority kept); a held task no longer unacknowledged is forgotten.

A slow task on a live worker is never touched: its node's heartbeat is alive, whatever the
task's age. A restored task may meet work its dead worker had half done; every task is idempotent
(:mod:`workers.tasks`), so it redoes only what has no outcome yet.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from workers.reconcile import UNACKED

if TYPE_CHECKING:
    import redis

__all__ = ["HEARTBEAT_S", "Heartbeat", "hold", "requeue_dead_holders", "unacked_tasks"]

log = logging.getLogger(__name__)

HEARTBEAT_S = 3.0  # how often a worker says it is alive
ALIVE_S = 15  # how long a heartbeat stands: five missed beats, so a busy machine does not look dead
SWEEP_S = 5.0  # how often the held tasks are looked at (by one worker at a time)

_HELD = "hivemem:held"
_ALIVE = "hivemem:alive:"
_SWEEP_LOCK = "hivemem:lock:held-sweep"
_PAGE = 500

# Puts one unacknowledged message back on its queue, by delivery tag (kombu's QoS.restore_by_tag).
Restore = Callable[[str], None]


def hold(client: redis.Redis, task_id: str, node: str) -> None:
    """Record that ``node`` has taken task ``task_id``."""
    client.hset(_HELD, task_id, node)


def _alive(client: redis.Redis, nodes: set[str]) -> set[str]:
    names = sorted(nodes)
    found = client.mget([_ALIVE + node for node in names])
    return {node for node, beat in zip(names, found, strict=True) if beat is not None}


def unacked_tasks(client: redis.Redis) -> dict[str, str]:
    """Task id -> delivery tag of every unacknowledged message."""
    tags: dict[str, str] = {}
    # kombu's hash of unacknowledged messages: delivery tag -> [message, exchange, routing key].
    for tag, raw in client.hscan_iter(UNACKED, count=_PAGE):
        try:
            message = json.loads(raw)[0]
            task_id = message["headers"]["id"]
        except (ValueError, KeyError, IndexError, TypeError):
            continue  # not a Celery task message: none of ours
        tags[str(task_id)] = tag.decode() if isinstance(tag, bytes) else str(tag)
    return tags


def requeue_dead_holders(client: redis.Redis, restore: Restore) -> list[str]:
    """Put back on their queues the tasks held by nodes without a heartbeat; forget held tasks that
    are no longer unacknowledged. Returns the ids of the tasks put back."""
    held = {k.decode(): v.decode() for k, v in client.hgetall(_HELD).items()}  # type: ignore[union-attr]
    if not held:
        return []
    alive = _alive(client, set(held.values()))
    unacked = unacked_tasks(client)
    requeued: list[str] = []
    for task_id, node in held.items():
        if task_id in unacked and node not in alive:
            restore(unacked[task_id])
            requeued.append(task_id)
        if task_id not in unacked or node not in alive:
            client.hdel(_HELD, task_id)
    if requeued:
        log.warning("handed %d task(s) of dead worker(s) to the others: %s", len(requeued), ", ".join(requeued))
    return requeued


class Heartbeat:
    """A worker's heartbeat thread: keeps ``node`` alive and, every ``SWEEP_S``, sweeps the held
    tasks when no other worker is doing it."""

    def __init__(self, client: redis.Redis, node: str, restore: Restore) -> None:
        self._client = client
        self._node = node
        self._restore = restore
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hivemem-heartbeat", daemon=True)

    def start(self) -> None:
        self._beat()
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and say so at once: this worker's tasks are done (a warm shutdown)."""
        self._stop.set()
        self._thread.join(timeout=ALIVE_S)
        try:
            self._client.delete(_ALIVE + self._node)
        except Exception:  # the broker is away: the key expires by itself
            log.debug("could not remove the heartbeat of %s", self._node, exc_info=True)

    def _beat(self) -> None:
        self._client.set(_ALIVE + self._node, "1", ex=ALIVE_S)

    def _run(self) -> None:
        since_sweep = SWEEP_S
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._beat()
                since_sweep += HEARTBEAT_S
                if since_sweep >= SWEEP_S and self._client.set(_SWEEP_LOCK, self._node, nx=True, ex=int(SWEEP_S)):
                    since_sweep = 0.0
                    requeue_dead_holders(self._client, self._restore)
            except Exception:  # a broker outage: the worker reports it; beat again next time
                log.warning("heartbeat of %s failed", self._node, exc_info=True)
