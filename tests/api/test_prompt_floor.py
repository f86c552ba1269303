"""The prompt hook injects a memory only from the cosine at which it bears on the prompt for the
server's model: all-MiniLM-L6-v2's 0.35 lets through nearly every memory under bge-small or
e5-small-v2 (their cosine for a question and a memory it does not ask for is 0.53 and 0.76 at the
median, over the small-store set), so the server names its model's floor and the hook reads it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.hooks.events import HookContext, prompt_submit
from api.remote import Remote
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.cosine_bands import bands_for
from hivemem.schemas import MemoryCreate, RecallRequest

SCOPE = "github.com/acme/payments"
PROMPT = {"prompt": "how do we deploy the payments service?", "session_id": "s"}


class AnsweringServer(Remote):
    """The server's recall answer, as given: the hook's one call, without a network in between."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__("http://127.0.0.1:1", token="", scope=SCOPE)
        self.answer = answer

    def remember(self, body: dict[str, Any]) -> dict[str, Any]:
        assert body["explain"] is True
        return self.answer


def _answer(floor: float | None, *scores: float) -> dict[str, Any]:
    results = [
        {"id": f"m{i}", "title": f"Memory {i}", "content": "…", "label": "[CONFIRMED]", "explain": {"knn_score": s}}
        for i, s in enumerate(scores)
    ]
    return {"results": results} | ({} if floor is None else {"knn_related_from": floor})


def _injected(answer: dict[str, Any], min_similarity: float | None = None) -> list[str]:
    said = prompt_submit(HookContext(PROMPT, AnsweringServer(answer), SCOPE, min_similarity))
    if said is None:
        return []
    text: str = said["hookSpecificOutput"]["additionalContext"]
    return [memory_id for memory_id in ("m0", "m1", "m2") if f"(id {memory_id})" in text]


def test_the_hook_reads_the_servers_floor_and_a_given_one_wins() -> None:
    bge = bands_for("BAAI/bge-small-en-v1.5").query_related
    # bge's scores for the answer and for two memories the prompt does not ask for.
    assert _injected(_answer(bge, 0.78, 0.53, 0.50)) == ["m0"]
    assert _injected(_answer(None, 0.78, 0.53, 0.50)) == ["m0", "m1", "m2"]  # a server of before: MiniLM's
    assert _injected(_answer(bge, 0.78, 0.53, 0.50), min_similarity=0.5) == ["m0", "m1", "m2"]
    assert _injected(_answer(bge, 0.40)) == []


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    opened = MemoryService.from_settings(settings)
    yield opened
    opened.close()


def test_a_recall_with_explain_names_its_models_floor_and_one_without_keeps_its_shape(service: MemoryService) -> None:
    note = MemoryCreate(title="Deploys go through staging", content="Every deploy goes to staging first.", scope=SCOPE)
    service.memorize(note, Caller())
    explained = service.remember(RecallRequest(query="how do we deploy?", scope=SCOPE, explain=True), Caller())
    assert explained.knn_related_from == bands_for(service.embedder.model_id).query_related == 0.35
    plain = service.remember(RecallRequest(query="how do we deploy?", scope=SCOPE), Caller())
    assert "knn_related_from" not in plain.model_dump(mode="json")
