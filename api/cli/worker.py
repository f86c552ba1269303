"""``hivemem worker`` and ``hivemem beat``: the Celery worker and scheduler of the distributed shape."""

from __future__ import annotations

import os
import sys

from api.process.cpu_priority import lower_cpu_priority
from hivemem.config import Settings
from hivemem.errors import ConfigError
from workers.job_tuning import JobTuning
from workers.queues import QUEUES

__all__ = ["run_beat", "run_worker"]


def parse_queues(spec: str) -> list[str]:
    """The queue names of a comma list, checked against the known queues."""
    queues = [q.strip() for q in spec.split(",") if q.strip()]
    unknown = [q for q in queues if q not in QUEUES]
    if not queues or unknown:
        raise ConfigError(f"--queues: unknown queue(s) {unknown or [spec]}; known: {', '.join(QUEUES)}")
    return queues


def run_worker(
    settings: Settings,
    *,
    queues: str,
    concurrency: int | None,
    device: str | None,
    pool: str,
    loglevel: str | None,
    nice: int = 0,
) -> int:
    """Run a worker consuming ``queues`` until stopped: SIGTERM finishes the running tasks, closes
    the store and exits 0. Warns first when the broker would lose queued jobs on a restart.

    ``nice`` lowers the CPU priority of the worker and its pool, and of its session where the kernel
    shares the CPU per session (:mod:`api.process.cpu_priority`): a bulk pool (``bulk``, ``ingest``) on a
    machine that also serves queries then takes the cores only when the gateway leaves them.
    """
    names = parse_queues(queues)
    # Before the pool forks: every pool process inherits the priority.
    priority_warning = lower_cpu_priority(nice)
    if priority_warning:
        print(f"warning: {priority_warning}", file=sys.stderr, flush=True)
    if device:
        # Pool processes build their settings from the environment: the device must travel there.
        os.environ["HIVEMEM_EMBED_DEVICE"] = device
        settings = settings.model_copy(update={"embed_device": device})
    if settings.embed_device.startswith("cuda"):
        from workers.models.pretrained import cuda_missing

        # Said now, not as a failure of every task that embeds or reranks once the worker runs.
        missing = cuda_missing()
        if missing:
            raise ConfigError(f"device {settings.embed_device} (--device or HIVEMEM_EMBED_DEVICE): {missing}")
    from workers.celery_app import get_app
    from workers.job_board import RedisJobBoard

    argv = [
        "worker",
        f"--queues={','.join(names)}",
        f"--pool={pool}",
        f"--loglevel={(loglevel or settings.log_level).upper()}",
        f"--hostname=hivemem-{os.getpid()}@%h",
        # Task events feed Flower; gossip and mingle only slow start-up for a pool of equals.
        "--task-events",
        "--without-gossip",
        "--without-mingle",
    ]
    if concurrency:
        argv.append(f"--concurrency={concurrency}")
    if not settings.embed_threads:
        # Each pool process embeds on its own: split the cores between them instead of letting
        # every process start one torch thread per core, which oversubscribes the CPU.
        threads = max(1, (os.cpu_count() or 1) // (concurrency or os.cpu_count() or 1))
        os.environ["HIVEMEM_EMBED_THREADS"] = str(threads)
        settings = settings.model_copy(update={"embed_threads": threads})
    app = get_app(settings)  # refuses a missing broker first
    from api.process.tracing import start_tracing

    # Before the pool forks: the span exporter's thread starts again in each pool process.
    start_tracing(settings, "worker")
    warning = RedisJobBoard.from_url(settings.broker_url, JobTuning().job_ttl_s).persistence_warning()
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    app.worker_main(argv)
    return 0


def run_beat(settings: Settings, *, loglevel: str | None) -> int:
    """Run the scheduler of periodic jobs (one per deployment); its state file lives in DATA_DIR."""
    from workers.celery_app import get_app

    data_dir = settings.data_dir.expanduser()
    data_dir.mkdir(parents=True, exist_ok=True)
    beat = get_app(settings).Beat(
        schedule=str(data_dir / "celerybeat-schedule"), loglevel=(loglevel or settings.log_level).upper()
    )
    beat.run()
    return 0
