"""With a broker, a sleep pass asked of a gateway and the workers' scheduled pass share one Redis lock."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import BrokerUnavailableError
from workers.sleep_lock import broker_sleep_lock, redis_sleep_lock, sleep_lock


def test_a_gateways_pass_waits_for_the_workers_pass_not_for_the_data_folder(redis_url: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    service = MemoryService.from_settings(Settings(data_dir=data_dir, embed_model="hash:64", broker_url=redis_url))
    client = redis.Redis.from_url(redis_url)
    try:
        with redis_sleep_lock(client, wait=False) as workers:  # what the scheduled task takes
            assert workers is True
            with service.lifecycle.sleep_lock(wait=False) as gateway:
                assert gateway is False
            with sleep_lock(data_dir, wait=False) as folder:  # the embedded shape's lock is not the one
                assert folder is True
        with service.lifecycle.sleep_lock(wait=False) as gateway:
            assert gateway is True
            with redis_sleep_lock(client, wait=False) as workers:
                assert workers is False  # the scheduled pass leaves the store to the gateway's
    finally:
        client.close()
        service.close()


def test_an_unreachable_broker_is_said_as_such() -> None:
    with (
        pytest.raises(BrokerUnavailableError, match="job broker is unreachable"),
        broker_sleep_lock("redis://127.0.0.1:1/0", wait=True),
    ):
        pass
