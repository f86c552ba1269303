"""The Celery app of the distributed shape: Redis broker and result backend from ``HIVEMEM_BROKER_URL``.

``celery --app workers.celery_app …`` (and ``hivemem worker``/``beat``) find the app as
``workers.celery_app.app``; it is built on first use from the environment's settings, so importing
this module needs no broker.

Delivery is at least once: tasks are acknowledged after they finish (``acks_late``), a task whose
worker died is handed out again within seconds by a live worker that sees the dead one's heartbeat
stop (:mod:`workers.holders`; at once when only the pool process died; after
``HIVEMEM_BROKER_VISIBILITY_TIMEOUT_S`` when no worker is left to see it), and every task is
idempotent, so a redelivery does no harm.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from celery import Celery
from celery.signals import task_received, worker_process_shutdown, worker_ready, worker_shutdown
from kombu.entity import Queue

from hivemem.config import Settings
from hivemem.errors import ConfigError
from workers.context import close_current
from workers.holders import Heartbeat, hold
from workers.job_tuning import JobTuning
from workers.queues import QUEUES, TASK_QUEUE, Task
from workers.spans import flush_spans

__all__ = ["build_celery", "get_app"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_app: Celery | None = None


def build_celery(settings: Settings) -> Celery:
    """A Celery app for ``settings``, with hivemem's tasks registered and beat's schedule set."""
    if not settings.broker_url:
        raise ConfigError("HIVEMEM_BROKER_URL is not set: the Celery workers need a redis:// broker")
    app = Celery("hivemem", broker=settings.broker_url, backend=settings.broker_url, set_as_current=False)
    jobs = JobTuning()
    visibility = jobs.broker_visibility_timeout_s
    transport = {
        "visibility_timeout": visibility,
        "queue_order_strategy": "priority",
        # Sweep for tasks of dead workers often enough that one is redelivered soon after its
        # visibility timeout, not up to 100 s later (kombu's default cadence).
        "unacked_restore_interval": max(1, min(60, visibility // 2)),
        "unacked_restore_throttle": 1,
    }
    app.conf.update(
        # JSON only: a broker message can never make a worker unpickle code.
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # One message at a time per process: a dying worker strands at most one task per process.
        worker_prefetch_multiplier=1,
        broker_transport_options=transport,
        result_backend_transport_options={"visibility_timeout": visibility},
        broker_connection_retry_on_startup=True,
        task_queues=[Queue(name) for name in QUEUES],  # type: ignore[no-untyped-call]
        task_default_queue="maintenance",
        task_routes={name: {"queue": queue} for name, queue in TASK_QUEUE.items()},
        task_track_started=True,
        result_expires=jobs.job_ttl_s,
        beat_schedule={
            "prune-dead-letters": {"task": Task.PRUNE_DEAD_LETTERS, "schedule": 3600.0},
            "reconcile-jobs": {"task": Task.RECONCILE, "schedule": float(jobs.reconcile_interval_s)},
            **(
                {"sleep-consolidate": {"task": Task.SLEEP, "schedule": 3600.0}}
                if settings.sleep_interval_hours > 0
                else {}
            ),
        },
        timezone="UTC",
    )
    from workers.tasks import register_tasks

    register_tasks(app, settings)
    return app


_heartbeat: dict[str, Any] = {}  # this worker's Heartbeat and the Redis client it and task_received use


@worker_ready.connect  # type: ignore[untyped-decorator]
def _reconcile_at_start(sender: Any, **_: Any) -> None:
    # A worker that starts after a crash finds the crashed one's lost jobs without waiting for beat.
    try:
        sender.app.send_task(Task.RECONCILE)
    except Exception:  # the broker's own outage is reported by the worker itself
        log.warning("could not queue reconciliation at start-up", exc_info=True)
    _start_heartbeat(sender.app, sender.hostname)


def _start_heartbeat(app: Celery, node: str) -> None:
    """Beat for this worker, and hand the tasks of dead ones to the live (:mod:`workers.holders`)."""
    import redis

    client = redis.Redis.from_url(app.conf.broker_url, socket_timeout=5, socket_connect_timeout=5)
    connection: list[Any] = []

    def restore(tag: str) -> None:
        # The heartbeat thread's own broker connection: kombu's are not shared between threads.
        if not connection:
            connection.append(app.connection_for_write())
        connection[0].default_channel.qos.restore_by_tag(tag)

    heartbeat = Heartbeat(client, node, restore)
    try:
        heartbeat.start()
    except Exception:
        log.warning("the heartbeat of %s could not start; its tasks wait out the visibility timeout", node)
        return
    _heartbeat.update(beat=heartbeat, client=client, node=node, pid=os.getpid())


@task_received.connect  # type: ignore[untyped-decorator]
def _held(request: Any, **_: Any) -> None:
    client = _heartbeat.get("client")
    if client is not None:
        try:
            hold(client, request.id, _heartbeat["node"])
        except Exception:  # unrecorded, the task is still redelivered after the visibility timeout
            log.warning("could not record task %s as held", request.id, exc_info=True)


@worker_process_shutdown.connect  # type: ignore[untyped-decorator]
@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _close_resources(**_: Any) -> None:
    # Warm shutdown: the running tasks are done, so the store can close cleanly.
    # Only the worker's own process: a pool process forked after the start inherits the record.
    beat = _heartbeat.pop("beat", None) if _heartbeat.get("pid") == os.getpid() else None
    if beat is not None:
        beat.stop()
    close_current()
    # A pool process leaves without running exit handlers: its last spans go now or never.
    flush_spans()


def get_app(settings: Settings | None = None) -> Celery:
    """The process's app, built once from ``settings`` (default: the environment)."""
    global _app
    with _lock:
        if _app is None:
            _app = build_celery(settings or Settings())
        return _app


def __getattr__(name: str) -> Any:
    # `celery --app workers.celery_app` looks up `app` (or `celery`) here; build it on that first use.
    if name in ("app", "celery"):
        return get_app()
    raise AttributeError(name)
