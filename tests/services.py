"""Real services for tests: a private ``redis-server`` and ``hivemem worker`` subprocesses.

They are the processes of :mod:`bench.suite.local_cluster`, configured for tests: the hash embedder,
a private data dir, the cleaned environment. Nothing here is a mock.
"""

from __future__ import annotations

from pathlib import Path

from bench.suite.local_cluster import RedisServer, WorkerProcess, redis_server_binary
from tests.e2e.helpers import hivemem_env

__all__ = ["CeleryWorker", "RedisServer", "redis_server_binary"]


class CeleryWorker(WorkerProcess):
    """A ``hivemem worker`` on ``data_dir``'s store and the broker ``broker_url``; logs in ``log_dir``."""

    def __init__(self, broker_url: str, data_dir: Path, log_dir: Path, *, name: str = "worker", **env: str) -> None:
        super().__init__(
            hivemem_env(data_dir, HIVEMEM_BROKER_URL=broker_url, **env), cwd=data_dir, log_path=log_dir / f"{name}.log"
        )
