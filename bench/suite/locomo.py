"""LoCoMo, turn mode: every turn of a conversation is a memory in that conversation's scope; each
question (categories 1–4) must bring back its evidence turns. Reports hit@1/5/10, MRR and the
recall latency (p50, p95), once per ``--variant`` when given (bench/suite/variants.py).

A question none of whose evidence is a turn of its conversation (the dataset lists none for a few)
cannot be answered by any retriever: it is not scored, and the report counts it
(``questions_without_evidence``)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.data_files import reading
from bench.suite.harness import bench_service
from bench.suite.metrics import hit_at, reciprocal_rank
from bench.suite.variants import Variant, latency_ms, run_variants
from hivemem.config import Settings
from hivemem.model import FusionMethod, MemoryType, RetrievalMode, Source
from hivemem.schemas import MemoryCreate, RecallRequest

__all__ = ["load_locomo", "run_locomo"]

CATEGORIES = (1, 2, 3, 4)
# A turn id as the dataset writes it, "D3:14", also in lists ("D8:6; D9:17") and with a stray
# colon ("D:11:26").
_TURN_ID = re.compile(r"D:?(\d+):(\d+)")


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    return f"{text} [shared an image: {caption}]" if caption else text


def load_locomo(
    path: Path, *, as_facts: bool = False
) -> tuple[list[tuple[str, MemoryCreate]], dict[tuple[str, str], int], list[dict[str, Any]]]:
    """The corpus (scope, memory) of every turn, a map (scope, dia_id) -> corpus index, and the questions.

    Turns are imported conversation memories; ``as_facts`` writes them as facts an agent noted
    instead, which write-time resolution by meaning applies to (a stress test of its merges)."""
    memory_type, source = (
        (MemoryType.FACT, Source.AGENT_INFERRED)
        if as_facts
        else (
            MemoryType.CONVERSATION,
            Source.IMPORTED,
        )
    )
    with reading(path, "a LoCoMo file (JSON, a list of conversations)"):
        conversations = json.loads(path.read_text(encoding="utf-8"))
        corpus: list[tuple[str, MemoryCreate]] = []
        turn_index: dict[tuple[str, str], int] = {}
        questions: list[dict[str, Any]] = []
        for conversation in conversations:
            scope = f"bench/locomo/{conversation['sample_id']}"
            sessions = conversation["conversation"]
            numbers = sorted(int(k.split("_")[1]) for k in sessions if re.fullmatch(r"session_\d+", k))
            for number in numbers:
                date = sessions.get(f"session_{number}_date_time", "")
                for turn in sessions[f"session_{number}"]:
                    text = _turn_text(turn)
                    if not text:
                        continue
                    speaker = turn["speaker"]
                    turn_index[(scope, turn["dia_id"])] = len(corpus)
                    corpus.append(
                        (
                            scope,
                            MemoryCreate(
                                title=f"{speaker} said ({date})"[:200],
                                content=f"[{date}] {speaker}: {text}"[:10_000],
                                memory_type=memory_type,
                                source=source,
                                thread=f"session_{number}",
                            ),
                        )
                    )
            for qa in conversation["qa"]:
                if qa.get("category") not in CATEGORIES:
                    continue
                evidence = {f"D{d}:{t}" for item in qa.get("evidence", []) for d, t in _TURN_ID.findall(str(item))}
                questions.append(
                    {
                        "scope": scope,
                        "question": qa["question"],
                        "category": qa["category"],
                        "evidence": evidence,
                    }
                )
    return corpus, turn_index, questions


def run_locomo(
    data: Path,
    settings: Settings,
    *,
    mode: RetrievalMode,
    fusion: FusionMethod,
    fresh: bool = False,
    as_facts: bool = False,
    variants: Sequence[Variant] = (),
) -> dict[str, Any]:
    """Run the benchmark and return the report (``as_facts``: see :func:`load_locomo`).

    With ``variants``, the questions are asked once per variant and the report holds each one's
    figures (``variants``) and their Markdown table (``table``); the top-level figures are the first's.
    """
    corpus, turn_index, listed = load_locomo(data, as_facts=as_facts)
    questions = [q for q in listed if any((q["scope"], d) in turn_index for d in q["evidence"])]

    def ask(variant: Variant, rebuild: bool) -> dict[str, Any]:
        run_settings = variant.settings(settings)
        service, ids = bench_service("locomo", corpus, run_settings, mode=mode, fusion=fusion, fresh=fresh and rebuild)
        try:
            return _ask(service, ids, turn_index, questions)
        finally:
            service.close()

    report = run_variants(variants, ask, ["hit@1", "hit@5", "hit@10", "mrr"])
    report["mode"], report["fusion"] = mode.value, fusion.value
    report["turns_as"] = "facts" if as_facts else "conversation"
    report["questions_without_evidence"] = len(listed) - len(questions)
    return report


def _ask(
    service: MemoryService,
    ids: dict[tuple[str, int], str],
    turn_index: dict[tuple[str, str], int],
    questions: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """Every question once: the figures overall and by category, and the recall latency."""
    totals: dict[str, float] = {"hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0, "mrr": 0.0}
    by_category: dict[int, dict[str, float]] = {}
    seconds: list[float] = []
    per_question: dict[str, dict[str, float]] = {}
    for number, q in enumerate(questions):
        relevant = {
            ids[(q["scope"], turn_index[(q["scope"], d)])] for d in q["evidence"] if (q["scope"], d) in turn_index
        }
        began = time.perf_counter()
        response = service.remember(
            RecallRequest(query=q["question"][:2000], limit=10),
            Caller(principal="bench", default_scope=q["scope"]),
        )
        seconds.append(time.perf_counter() - began)
        ranked = [r.id for r in response.results]
        scores = {
            "hit@1": hit_at(ranked, relevant, 1),
            "hit@5": hit_at(ranked, relevant, 5),
            "hit@10": hit_at(ranked, relevant, 10),
            "mrr": reciprocal_rank(ranked, relevant),
        }
        per_question[f"{q['scope']} {number}"] = scores
        bucket = by_category.setdefault(q["category"], {"questions": 0.0, **dict.fromkeys(totals, 0.0)})
        bucket["questions"] += 1
        for name, value in scores.items():
            totals[name] += value
            bucket[name] += value
    n = len(questions)
    report: dict[str, Any] = {"questions": n, **{k: round(v / n, 4) if n else 0.0 for k, v in totals.items()}}
    report["by_category"] = {
        str(c): {"questions": int(b["questions"]), **{k: round(b[k] / b["questions"], 4) for k in totals}}
        for c, b in sorted(by_category.items())
    }
    return {**report, **latency_ms(seconds), "per_question": per_question}
