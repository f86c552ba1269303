"""The distributed shape on one machine: a private Redis, real ``hivemem worker`` processes, real
``hivemem serve`` gateways, all on one SQLite store (a valid configuration of the Celery path)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.e2e.helpers import HivememServer
from tests.services import CeleryWorker, RedisServer


@dataclass
class Cluster:
    """Two gateways and two single-process workers over one broker database and one store."""

    broker_url: str
    data_dir: Path
    gateways: list[HivememServer]
    workers: list[CeleryWorker]


@pytest.fixture(scope="module")
def cluster(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # Its own Redis database, so tests that flush database 0 don't touch this module's queues.
    broker_url = redis_server.url.rsplit("/", 1)[0] + "/1"
    redis.Redis.from_url(broker_url).flushdb()
    root = tmp_path_factory.mktemp("cluster")
    data_dir, logs = root / "data", root / "logs"
    data_dir.mkdir()
    logs.mkdir()
    workers = [CeleryWorker(broker_url, data_dir, logs, name=f"worker-{i}") for i in range(2)]
    gateways = [
        HivememServer(data_dir, logs / f"gateway-{i}", HIVEMEM_BROKER_URL=broker_url, HIVEMEM_MEMORIZE_WAIT_S="20")
        for i in range(2)
    ]
    try:
        for gateway in gateways:
            gateway.log_dir.mkdir()
        for worker in workers:
            worker.start(concurrency=1)
        for gateway in gateways:
            gateway.start()
        yield Cluster(broker_url, data_dir, gateways, workers)
    finally:
        for gateway in gateways:
            if gateway.process is not None:
                gateway.stop()
        for worker in workers:
            worker.stop()
