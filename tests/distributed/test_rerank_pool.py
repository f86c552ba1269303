"""The rerank pool: a real ``hivemem worker --queues rerank`` scoring with a cross-encoder for the
gateway, and recall that degrades to first-stage order, with no error, when the pool is late or down.

The cross-encoder is the tiny randomly initialised one of tests/rerank_models.py (no trained weights
can be had here): the pool must give the gateway exactly the scores the model gives in-process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from hivemem.config import Settings
from hivemem.errors import RerankLateError, RerankUnavailableError
from tests.e2e.helpers import HivememServer
from tests.services import CeleryWorker, RedisServer
from workers.models.rerankers import CrossEncoderReranker
from workers.rerank_pool import PoolReranker
from workers.rerank_pool_tuning import RerankPoolTuning

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")

QUERY = "how long does the billing client wait"
PASSAGES = [
    "The billing client times out after 30 seconds.",
    "Deploys run from the release branch every Tuesday.",
    "Logs are shipped to Loki and kept for 30 days.",
]


@pytest.fixture(scope="module")
def broker(redis_server: RedisServer) -> str:
    # A database of its own: other modules flush database 0.
    url = redis_server.url.rsplit("/", 1)[0] + "/3"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="module")
def rerank_worker(broker: str, cross_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryWorker]:
    root = tmp_path_factory.mktemp("rerank-pool")
    worker = CeleryWorker(broker, root, root, name="rerank", HIVEMEM_RERANK_MODEL=f"cross:{cross_folder}")
    worker.start(queues="rerank", concurrency=1)
    yield worker
    worker.stop()


def _pool(broker: str, cross_folder: Path, **changes: object) -> PoolReranker:
    settings = Settings(broker_url=broker, rerank_model=f"cross:{cross_folder}", rerank_pool=True)
    return PoolReranker(settings, tuning=RerankPoolTuning.model_validate(changes))


def test_the_pool_scores_as_the_model_does_in_process(
    broker: str, cross_folder: Path, rerank_worker: CeleryWorker
) -> None:
    # The first task loads torch and the model in the worker: a deadline that allows for it.
    pool = _pool(broker, cross_folder, rerank_deadline_ms=60_000)
    scores = pool.score(QUERY, PASSAGES)
    assert scores == pytest.approx(CrossEncoderReranker(str(cross_folder)).score(QUERY, PASSAGES), abs=1e-4)
    assert pool.score(QUERY, []) == []
    assert pool.fallbacks == {}


def test_a_slow_pool_is_late_within_the_deadline_then_skipped_while_it_cools_off(
    broker: str, cross_folder: Path, rerank_worker: CeleryWorker
) -> None:
    # 400 pairs of 500 words through even a tiny cross-encoder take over a second on a CPU: the
    # pool is alive and working, and cannot answer within 50 ms.
    pool = _pool(broker, cross_folder, rerank_deadline_ms=50, rerank_pool_cooldown_s=3600)
    # What each call raises says how it ended (late at the deadline; skipped without asking the
    # pool): no wall-clock bound, which a loaded machine would break.
    with pytest.raises(RerankLateError):
        pool.score(QUERY, ["billing " * 500] * 400)
    with pytest.raises(RerankUnavailableError, match="cools off"):
        pool.score(QUERY, PASSAGES)
    assert pool.fallbacks == {"late": 1, "cooling": 1}


def test_an_unreachable_broker_is_unavailable_at_once(cross_folder: Path) -> None:
    with socket_closed() as port:
        pool = _pool(f"redis://127.0.0.1:{port}/0", cross_folder, rerank_deadline_ms=500)
        with pytest.raises(RerankUnavailableError, match="cannot reach the rerank pool"):
            pool.score(QUERY, PASSAGES)
    assert pool.fallbacks == {"unreachable": 1}


def test_recall_through_a_gateway_whose_pool_is_down_answers_in_first_stage_order(
    redis_server: RedisServer, cross_folder: Path, tmp_path: Path
) -> None:
    # A cluster whose write path works (a worker on the job queues) and whose rerank pool is gone.
    broker = redis_server.url.rsplit("/", 1)[0] + "/4"
    redis.Redis.from_url(broker).flushdb()
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    writer = CeleryWorker(broker, data_dir, logs, name="writer")
    env = {
        "HIVEMEM_BROKER_URL": broker,
        "HIVEMEM_MEMORIZE_WAIT_S": "20",
        "HIVEMEM_RERANK_MODEL": f"cross:{cross_folder}",
        "HIVEMEM_RERANK_POOL": "true",
        "HIVEMEM_RERANK_DEADLINE_MS": "300",
    }
    gateway = HivememServer(data_dir, logs / "gateway", **env)
    gateway.log_dir.mkdir()
    writer.start(queues="resolve,embed,maintenance", concurrency=1)
    try:
        gateway.start()
        scope = "github.com/acme/rerank"
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            for content in PASSAGES:
                created = http.post("/v1/memories", json={"title": content[:40], "content": content, "scope": scope})
                assert created.status_code == 201, created.text
            outcomes = []
            for _ in range(2):
                found = http.post("/v1/remember", json={"query": QUERY, "scope": scope, "explain": True})
                assert found.status_code == 200, found.text
                results = found.json()["results"]
                assert results and results[0]["content"] == PASSAGES[0]
                outcomes.append({r["explain"]["rerank"] for r in results})
                assert all(r["explain"]["rerank_rank"] is None for r in results)
            # Late the first time (nobody consumes the queue), then skipped while the pool cools off.
            assert outcomes == [{"late"}, {"unavailable"}]
            status = http.get("/v1/status", params={"scope": scope}).json()
            assert status["rerank_fallbacks"] == {"late": 1, "cooling": 1}
    finally:
        if gateway.process is not None:
            gateway.stop()
        writer.stop()


class socket_closed:
    """A local port nobody listens on, for the block."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None
