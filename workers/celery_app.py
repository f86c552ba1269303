"""The Celery app of the distributed shape: Redis broker and result backend from ``HIVEMEM_BROKER_URL``.

``celery --app workers.celery_app …`` (and ``hivemem worker``/``beat``) find the app as
``workers.celery_app.app``; it is built on first use from the environment's settings, so importing
this module needs no broker.

Delivery is at least once: tasks are acknowledged after they finish (``acks_late``), a task whose
worker died is handed out again after ``HIVEMEM_BROKER_VISIBILITY_TIMEOUT_S`` (or at once when only
the pool process died), and every task is idempotent, so a redelivery does no harm.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import Celery
from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown
from kombu.entity import Queue

from hivemem.config import Settings
from hivemem.errors import ConfigError
from workers.context import close_current
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
    visibility = settings.broker_visibility_timeout_s
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
        result_expires=settings.job_ttl_s,
        beat_schedule={
            "prune-dead-letters": {"task": Task.PRUNE_DEAD_LETTERS, "schedule": 3600.0},
            "reconcile-jobs": {"task": Task.RECONCILE, "schedule": float(settings.reconcile_interval_s)},
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


@worker_ready.connect  # type: ignore[untyped-decorator]
def _reconcile_at_start(sender: Any, **_: Any) -> None:
    # A worker that starts after a crash finds the crashed one's lost jobs without waiting for beat.
    try:
        sender.app.send_task(Task.RECONCILE)
    except Exception:  # the broker's own outage is reported by the worker itself
        log.warning("could not queue reconciliation at start-up", exc_info=True)


@worker_process_shutdown.connect  # type: ignore[untyped-decorator]
@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _close_resources(**_: Any) -> None:
    # Warm shutdown: the running tasks are done, so the store can close cleanly.
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
