"""Write-time resolution against the nearest memories, with 8 concurrent writers on 2 real workers.

Each writer's memorize is resolved on a worker, serialized per scope (the Redis scope lock, then
SQLite's single writer): the memories the scope ends with are those one writer would leave.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate
from tests.e2e.helpers import HivememServer
from tests.services import CeleryWorker

SCOPE = "github.com/acme/resolve"
RESOLUTION = {"HIVEMEM_RESOLUTION_NEIGHBOURS": "5"}
TOPICS = [
    "the build cache lives in the s3 bucket named alpha",
    "deploys run from the release branch every tuesday morning",
    "the billing client times out after thirty seconds of silence",
    "pull requests need two approvals before merging to main",
    "logs are shipped to loki and kept for thirty days",
    "the nightly backup job runs at two in the morning utc",
]
# Five wordings of each fact: with the hash embedder, within a topic cosine >= 0.80 (reinforce or
# merge), across topics <= 0.46 (a new memory).
NOTES = [
    wording
    for topic in TOPICS
    for wording in (topic, f"{topic} for now", f"note: {topic}", f"{topic} as agreed", f"reminder: {topic}")
]


def _signature(rows: list[tuple[str, int]]) -> list[tuple[int, int]]:
    """What a scope holds, independent of which wording came first: for each topic, how many
    memories hold it and their accesses (one per wording folded in)."""
    return sorted(
        (sum(1 for content, _ in rows if topic in content), sum(a for content, a in rows if topic in content))
        for topic in TOPICS
    )


def _one_writer(tmp_path: Path) -> list[tuple[int, int]]:
    settings = Settings(
        store_url=f"sqlite:///{tmp_path / 'one.db'}",
        data_dir=str(tmp_path),
        broker_url="",
        embed_model="hash:64",
    )
    service = MemoryService.from_settings(settings)
    try:
        for note in NOTES:
            service.memorize(MemoryCreate(title=note[:40], content=note, scope=SCOPE), Caller(default_scope=SCOPE))
    finally:
        service.close()
    return _signature(_rows(tmp_path / "one.db"))


def _rows(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return [
            (str(c), int(a))
            for c, a in conn.execute("SELECT content, access_count FROM memories WHERE scope = ?", (SCOPE,))
        ]


@pytest.fixture
def resolving_cluster(redis_url: str, tmp_path: Path) -> Iterator[HivememServer]:
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    workers = [CeleryWorker(redis_url, data_dir, logs, name=f"worker-{i}", **RESOLUTION) for i in range(2)]
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="60", **RESOLUTION)
    try:
        for worker in workers:
            worker.start(concurrency=1)
        gateway.start()
        yield gateway
    finally:
        if gateway.process is not None:
            gateway.stop()
        for worker in workers:
            worker.stop()


def test_eight_concurrent_writers_leave_what_one_writer_leaves(
    resolving_cluster: HivememServer, tmp_path: Path
) -> None:
    expected = _one_writer(tmp_path)
    assert expected == [(1, 4)] * len(TOPICS)  # one memory per fact, every other wording folded in

    shuffled = random.Random(7).sample(NOTES, len(NOTES))
    writers = [shuffled[i::8] for i in range(8)]

    def write(notes: list[str]) -> list[dict[str, Any]]:
        answers = []
        with httpx.Client(base_url=resolving_cluster.url, timeout=90) as http:
            for note in notes:
                answer = http.post("/v1/memories", json={"title": note[:40], "content": note, "scope": SCOPE})
                assert answer.status_code == 201, answer.text
                answers.append(answer.json())
        return answers

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = [a for batch in pool.map(write, writers) for a in batch]

    assert sorted(a["outcome"] for a in answers).count("stored") == len(TOPICS)
    assert _signature(_rows(resolving_cluster.data_dir / "hivemem.db")) == expected
