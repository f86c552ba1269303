"""The rerank stage inside recall (search/recall.py), over a real SQLite store: what it reorders,
what ``explain`` says, and that a failed or late reranker costs the caller its order, not an answer.

The rerankers here are small implementations of the :class:`hivemem.rerank.Reranker` protocol with
a known preference, so the expected order is known; the model-backed rerankers have their own tests
(tests/workers/test_rerankers.py) and one runs end to end below.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.answers import RecallResult
from hivemem.config import Settings
from hivemem.errors import RerankLateError
from hivemem.rerank import Reranker, RerankGate
from hivemem.schemas import MemoryCreate, RecallRequest

SCOPE = "github.com/acme/api"
CALLER = Caller(default_scope=SCOPE)
NOTES = {
    "Retry policy": "HTTP clients retry three times with exponential backoff.",
    "Retry budget": "Retries stop once a request has spent its budget of ten seconds.",
    "Retry logging": "Every retry is logged with the attempt number, and Loki keeps the logs.",
}


class Prefers:
    """Scores a passage 1.0 when it holds ``word``, else 0.0."""

    model_id = "prefers"

    def __init__(self, word: str) -> None:
        self.word = word
        self.asked: list[tuple[str, int]] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.asked.append((query, len(passages)))
        return [1.0 if self.word in p else 0.0 for p in passages]


class Fails:
    model_id = "fails"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        raise self.error


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    svc = MemoryService.from_settings(settings)
    for title, content in NOTES.items():
        svc.memorize(MemoryCreate(title=title, content=content), CALLER)
    yield svc
    svc.close()


def _recall(service: MemoryService, query: str = "retry with exponential backoff") -> list[RecallResult]:
    request = RecallRequest(query=query, explain=True)
    return service.remember(request, CALLER).results


def _rerank_with(service: MemoryService, reranker: Reranker, **policy: object) -> None:
    service.recaller.reranker = reranker
    service.recaller.params = service.recaller.params.model_copy(update={f"rerank_{k}": v for k, v in policy.items()})


def _stage(result: RecallResult) -> object:
    assert result.explain is not None
    return result.explain["rerank"]


def test_without_a_reranker_the_stage_is_off(service: MemoryService) -> None:
    results = _recall(service)
    assert results[0].title == "Retry policy"
    assert {_stage(r) for r in results} == {"off"}


def test_a_reranker_reorders_the_head_and_explain_shows_both_ranks(service: MemoryService) -> None:
    first = [r.title for r in _recall(service)]
    reranker = Prefers("Loki")
    _rerank_with(service, reranker, gate=RerankGate.ALWAYS, weight=1.0)
    results = _recall(service)
    assert results[0].title == "Retry logging"
    assert reranker.asked == [("retry with exponential backoff", len(first))]
    top = results[0].explain
    assert top is not None
    assert (top["rerank"], top["rerank_rank"], top["rerank_score"]) == ("applied", 1, 1.0)
    assert top["fused_rank"] == first.index("Retry logging") + 1
    # The scores were handed out by position: the top result has the first stage's best score.
    assert results[0].score >= results[1].score


def test_the_margin_gate_leaves_a_sure_first_stage_alone(service: MemoryService) -> None:
    _rerank_with(service, Prefers("Loki"), gate=RerankGate.MARGIN, margin=0.0, weight=1.0)
    results = _recall(service)
    assert results[0].title == "Retry policy" and {_stage(r) for r in results} == {"gated"}


@pytest.mark.parametrize(
    ("error", "outcome"), [(RerankLateError("late"), "late"), (RuntimeError("the model fell over"), "unavailable")]
)
def test_a_failed_or_late_reranker_leaves_the_first_stage_order(
    service: MemoryService, error: Exception, outcome: str
) -> None:
    first = [(r.id, r.score) for r in _recall(service)]
    _rerank_with(service, Fails(error), gate=RerankGate.ALWAYS, weight=1.0)
    results = _recall(service)
    assert [(r.id, r.score) for r in results] == first
    assert {_stage(r) for r in results} == {outcome}


def test_a_configured_cross_encoder_runs_in_the_serving_process(settings: Settings, cross_folder: Path) -> None:
    svc = MemoryService.from_settings(settings.model_copy(update={"rerank_model": f"cross:{cross_folder}"}))
    try:
        for title, content in NOTES.items():
            svc.memorize(MemoryCreate(title=title, content=content), CALLER)
        results = _recall(svc)
        assert len(results) == 3 and {_stage(r) for r in results} == {"applied"}
        assert sorted(r.explain["rerank_rank"] for r in results if r.explain) == [1, 2, 3]  # type: ignore[type-var]
    finally:
        svc.close()
