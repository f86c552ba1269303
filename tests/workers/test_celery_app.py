"""The Celery app's delivery settings, the worker command's checks, and a gateway whose broker is down."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.cli import main
from api.main import create_app
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import BrokerUnavailableError, ConfigError
from hivemem.schemas import MemoryCreate
from tests.e2e.helpers import free_port
from workers.celery_app import build_celery
from workers.queues import QUEUES, TASK_QUEUE, Task


def test_delivery_is_at_least_once_json_only_and_routed_by_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_BROKER_VISIBILITY_TIMEOUT_S", "90")
    monkeypatch.setenv("HIVEMEM_JOB_RETRIES", "7")
    app = build_celery(Settings(broker_url="redis://127.0.0.1:1/0"))
    conf = app.conf
    assert conf.task_serializer == "json" and conf.result_serializer == "json"
    assert list(conf.accept_content) == ["json"] and list(conf.result_accept_content) == ["json"]
    assert conf.task_acks_late is True and conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.broker_transport_options["visibility_timeout"] == 90
    assert conf.broker_transport_options["queue_order_strategy"] == "priority"
    assert [q.name for q in conf.task_queues] == list(QUEUES)
    assert {"embed", "resolve", "bulk", "ingest", "consolidate", "maintenance", "rerank"} == set(QUEUES)
    assert QUEUES[-2:] == ("bulk", "ingest")  # bulk work drains last
    assert conf.task_routes == {name: {"queue": queue} for name, queue in TASK_QUEUE.items()}
    for name in (Task.EMBED, Task.RESOLVE, Task.MEMORIZE_BULK, Task.RECORD_ACCESS, Task.PRUNE_DEAD_LETTERS):
        task = app.tasks[name]
        assert task.max_retries == 7 and task.acks_late is True
    assert {s["task"] for s in conf.beat_schedule.values()} == {Task.PRUNE_DEAD_LETTERS, Task.RECONCILE, Task.SLEEP}
    assert TASK_QUEUE[Task.SLEEP] == "consolidate"


def test_the_app_needs_a_broker() -> None:
    with pytest.raises(ConfigError, match="HIVEMEM_BROKER_URL"):
        build_celery(Settings())


def test_worker_command_refuses_unknown_queues_and_a_missing_broker(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIVEMEM_BROKER_URL", "redis://127.0.0.1:1/0")
    assert main(["worker", "--queues", "embed,gpu"]) == 2
    assert "unknown queue(s) ['gpu']" in capsys.readouterr().err
    monkeypatch.delenv("HIVEMEM_BROKER_URL")
    assert main(["worker", "--queues", "embed"]) == 2
    assert "HIVEMEM_BROKER_URL is not set" in capsys.readouterr().err


def test_a_gateway_whose_broker_is_down_answers_503_and_writes_nothing(settings: Settings) -> None:
    dead = Settings.model_validate(settings.model_dump() | {"broker_url": f"redis://127.0.0.1:{free_port()}/0"})
    service = MemoryService.from_settings(dead)
    try:
        with pytest.raises(BrokerUnavailableError):
            service.memorize(MemoryCreate(title="Broker down", content="This never reaches a worker."))
        assert service.store.count() == 0
        with TestClient(create_app(dead, service), base_url="http://127.0.0.1:8765") as http:
            answer = http.post("/v1/memories", json={"title": "Broker down", "content": "Nor does this one."})
            assert answer.status_code == 503
            assert answer.json()["error"] == "broker_unavailable"
            # A 503 may hide a write that landed (the broker took it, then the answer was lost):
            # the body says that retrying is safe.
            assert "Retrying is safe" in answer.json()["message"]
            ready = http.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"]["broker"] is False
    finally:
        service.close()


@pytest.mark.parametrize("args", [["worker", "--concurrency", "0"], ["worker", "--concurrency", "many"]])
def test_worker_command_refuses_a_bad_concurrency(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert "--concurrency" in capsys.readouterr().err


def test_worker_command_refuses_cuda_where_torch_sees_none(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the refusal is for machines without one")
    monkeypatch.setenv("HIVEMEM_BROKER_URL", "redis://127.0.0.1:1/0")
    # Said at start, not as a failure of each task once the worker runs.
    assert main(["worker", "--queues", "embed,rerank", "--device", "cuda"]) == 2
    assert "device cuda (--device or HIVEMEM_EMBED_DEVICE): torch sees no CUDA device" in capsys.readouterr().err
    monkeypatch.setenv("HIVEMEM_EMBED_DEVICE", "cuda:1")
    assert main(["worker", "--queues", "embed"]) == 2  # the setting, too
    assert "device cuda:1 (--device or HIVEMEM_EMBED_DEVICE): torch sees no" in capsys.readouterr().err
