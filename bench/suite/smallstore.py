"""Small stores, as a team starts with: one project's decision records per scope, a few dozen each.

The set (``bench/smallstore/adr.jsonl``, built by ``bench/smallstore/build.py`` from public
projects' architecture decision records) holds memories, one per record, and two questions per
record: ``paraphrased`` (the opening of its Context section: the problem in other words) and
``exact`` (naming the record's subject). Each scope is memorized as decisions; each question is
asked in its scope. Reported: hit@1, hit@3, hit@5 and MRR (of the first 10), overall and by style.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.data_files import json_lines, reading
from bench.suite.harness import bench_service
from bench.suite.variants import Variant, latency_ms, run_variants
from hivemem.config import Settings
from hivemem.model import FusionMethod, MemoryType, RetrievalMode, Source
from hivemem.schemas import MemoryCreate, RecallRequest

__all__ = ["load_smallstore", "run_smallstore"]

METRICS = ["hit@1", "hit@3", "hit@5", "mrr"]
_DEPTH = 10


def load_smallstore(path: Path) -> tuple[list[tuple[str, MemoryCreate]], list[str], list[dict[str, str]]]:
    """The memories (scope, request), the set's id of each, and the questions."""
    corpus: list[tuple[str, MemoryCreate]] = []
    names: list[str] = []
    questions: list[dict[str, str]] = []
    with path.open(encoding="utf-8") as handle, reading(path, "a small-store set (JSON lines)"):
        for line in json_lines(handle):
            if line["kind"] == "memory":
                request = MemoryCreate(
                    title=line["title"][:200],
                    content=line["content"],
                    memory_type=MemoryType.DECISION,
                    source=Source.AGENT_INFERRED,
                )
                corpus.append((line["scope"], request))
                names.append(line["id"])
            else:
                questions.append({k: str(line[k]) for k in ("scope", "answer", "style", "query")})
    return corpus, names, questions


def _scores(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "hit@1": round(sum(r is not None and r <= 1 for r in ranks) / n, 4),
        "hit@3": round(sum(r is not None and r <= 3 for r in ranks) / n, 4),
        "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
        "mrr": round(sum(1.0 / r for r in ranks if r is not None) / n, 4),
    }


def _ask(service: MemoryService, memories_of: dict[str, set[str]], questions: list[dict[str, str]]) -> dict[str, Any]:
    ranks: dict[str, list[int | None]] = {}
    per_question: dict[str, dict[str, float]] = {}
    seconds: list[float] = []
    for question in questions:
        began = time.perf_counter()
        response = service.remember(
            RecallRequest(query=question["query"], limit=_DEPTH),
            Caller(principal="bench", default_scope=question["scope"]),
        )
        seconds.append(time.perf_counter() - began)
        answers = memories_of[question["answer"]]
        rank = next((i for i, r in enumerate(response.results, start=1) if r.id in answers), None)
        ranks.setdefault(question["style"], []).append(rank)
        per_question[f"{question['answer']} {question['style']}"] = _scores([rank])
    every = [r for style in ranks.values() for r in style]
    return {
        "questions": len(every),
        **_scores(every),
        "by_style": {style: {"questions": len(r), **_scores(r)} for style, r in sorted(ranks.items())},
        **latency_ms(seconds),
        "per_question": per_question,
    }


def run_smallstore(
    data: Path,
    settings: Settings,
    *,
    mode: RetrievalMode,
    fusion: FusionMethod,
    fresh: bool = False,
    variants: Sequence[Variant] = (),
) -> dict[str, Any]:
    """Run the set and return the report; with ``variants``, once per variant (see
    :func:`bench.suite.locomo.run_locomo`)."""
    corpus, names, questions = load_smallstore(data)

    def ask(variant: Variant, rebuild: bool) -> dict[str, Any]:
        run_settings = variant.settings(settings)
        service, ids = bench_service(
            "smallstore", corpus, run_settings, mode=mode, fusion=fusion, fresh=fresh and rebuild
        )
        # The memories that hold the records of each name: a record's own, or the one write-time
        # resolution merged it into (as LoCoMo's evidence is read).
        memories_of: dict[str, set[str]] = {}
        for i, (scope, _) in enumerate(corpus):
            memories_of.setdefault(names[i], set()).add(ids[(scope, i)])
        try:
            return _ask(service, memories_of, questions)
        finally:
            service.close()

    report = run_variants(variants, ask, METRICS)
    report["mode"], report["fusion"], report["set"] = mode.value, fusion.value, data.name
    return report
