"""Switching the model of an existing store: what the re-embed job keeps and what recall finds.

The small-store set (``bench/smallstore/adr.jsonl``) is written into a new SQLite store with the
configured model; its questions are asked; the store is opened again with ``to`` (a model name,
hub id or folder), which starts the background re-embed (``HIVEMEM_REEMBED_ON_MODEL_CHANGE``);
once it is done the same questions are asked again. Reported: the memories before and after, how
many kept their text, the model the store records, the re-embed's time, and hit@5 before and after.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.smallstore import load_smallstore
from hivemem.answers import MemorizeResult
from hivemem.config import Settings
from hivemem.schemas import RecallRequest

__all__ = ["run_model_switch"]

_REEMBED_WAIT_S = 3600.0  # a backstop: the wait ends when the job does


def _hit_at_5(service: MemoryService, questions: list[dict[str, str]], ids: dict[str, str]) -> int:
    found = 0
    for question in questions:
        answer = service.remember(RecallRequest(query=question["query"], scope=question["scope"], limit=5), Caller())
        found += any(hit.id == ids[question["answer"]] for hit in answer.results)
    return found


def run_model_switch(data: Path, settings: Settings, to: str) -> dict[str, Any]:
    """Write ``data`` with the configured model, switch the store to ``to``, and report (see the module)."""
    corpus, names, questions = load_smallstore(data)
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-switch-") as folder:
        first = settings.model_copy(update={"data_dir": Path(folder), "store_url": "", "broker_url": ""})
        service = MemoryService.from_settings(first)
        try:
            ids: dict[str, str] = {}
            scopes: dict[str, str] = {}  # memory id -> its scope
            for name, (scope, request) in zip(names, corpus, strict=True):
                written = service.memorize(request.model_copy(update={"scope": scope}), Caller())
                assert isinstance(written, MemorizeResult)
                ids[name], scopes[written.id] = written.id, scope
            texts = {i: service.get(i, Caller(), scope=s).content for i, s in scopes.items()}
            before = {"model": service.store.embedding_model, "hit@5": _hit_at_5(service, questions, ids)}
        finally:
            service.close()
        began = time.monotonic()
        service = MemoryService.from_settings(first.model_copy(update={"embed_model": to}))
        try:
            job = service.wait_for_reembed(_REEMBED_WAIT_S)
            seconds = time.monotonic() - began
            kept = sum(service.get(i, Caller(), scope=s).content == texts[i] for i, s in scopes.items())
            after = {"model": service.store.embedding_model, "hit@5": _hit_at_5(service, questions, ids)}
        finally:
            service.close()
    return {
        "memories": len(ids),
        "questions": len(questions),
        "before": before,
        "reembed": {"state": job.state.value, "seconds": round(seconds, 1)},
        "after": after,
        "kept_their_text": kept,
    }
