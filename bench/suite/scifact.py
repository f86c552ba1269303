"""BEIR SciFact: the corpus as memories in one scope, claims as queries; nDCG@10 and recall@100."""

from __future__ import annotations

import csv
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.data_files import json_lines, reading
from bench.suite.harness import bench_service
from bench.suite.metrics import ndcg_at, recall_at
from bench.suite.variants import Variant, latency_ms, run_variants
from hivemem.config import Settings
from hivemem.limits import printable
from hivemem.model import FusionMethod, MemoryType, RetrievalMode, Source
from hivemem.schemas import MemoryCreate, RecallRequest

__all__ = ["load_scifact", "run_scifact"]

SCOPE = "bench/scifact"


def _fit(text: str, low: int, high: int, filler: str) -> str:
    # A few abstracts carry C1 control characters (mis-decoded quotes and dashes).
    text = " ".join(printable(text).split())[:high]
    return text if len(text) >= low else (text + " " + filler)[:high]


def load_qrels(path: Path) -> dict[str, dict[str, float]]:
    """query id -> {doc id: grade} from a BEIR qrels TSV (with header)."""
    qrels: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8") as handle, reading(path, "a BEIR qrels file (TSV with a header)"):
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = float(row["score"])
    return qrels


def load_scifact(
    folder: Path, qrels_file: Path | None
) -> tuple[list[tuple[str, MemoryCreate]], list[str], dict[str, str], dict[str, dict[str, float]]]:
    """The corpus as memories, the doc id of each, the queries (id -> text) and the judgements."""
    corpus: list[tuple[str, MemoryCreate]] = []
    doc_ids: list[str] = []
    corpus_file = folder / "corpus.jsonl"
    with corpus_file.open(encoding="utf-8") as handle, reading(corpus_file, "a BEIR corpus (JSON lines)"):
        for doc in json_lines(handle):
            title = _fit(doc.get("title") or doc["_id"], 5, 200, "(untitled)")
            content = _fit(doc.get("text") or title, 10, 10_000, "(no abstract)")
            corpus.append(
                (
                    SCOPE,
                    MemoryCreate(title=title, content=content, memory_type=MemoryType.FACT, source=Source.IMPORTED),
                )
            )
            doc_ids.append(str(doc["_id"]))
    qrels = load_qrels(qrels_file or folder / "qrels" / "train.tsv")
    queries: dict[str, str] = {}
    queries_file = folder / "queries.jsonl"
    with queries_file.open(encoding="utf-8") as handle, reading(queries_file, "a BEIR queries file (JSON lines)"):
        for query in json_lines(handle):
            if str(query["_id"]) in qrels:
                queries[str(query["_id"])] = query["text"]
    return corpus, doc_ids, queries, qrels


def run_scifact(
    data: Path,
    settings: Settings,
    *,
    qrels: Path | None,
    mode: RetrievalMode,
    fusion: FusionMethod,
    fresh: bool = False,
    variants: Sequence[Variant] = (),
) -> dict[str, Any]:
    """Run the benchmark and return the report; with ``variants``, once per variant (see
    :func:`bench.suite.locomo.run_locomo`)."""
    corpus, doc_ids, queries, judgements = load_scifact(data, qrels)

    def ask(variant: Variant, rebuild: bool) -> dict[str, Any]:
        run_settings = variant.settings(settings)
        service, ids = bench_service("scifact", corpus, run_settings, mode=mode, fusion=fusion, fresh=fresh and rebuild)
        docs_of: dict[str, list[str]] = {}
        for index, doc_id in enumerate(doc_ids):
            docs_of.setdefault(ids[(SCOPE, index)], []).append(doc_id)
        try:
            return _ask(service, docs_of, queries, judgements)
        finally:
            service.close()

    report = run_variants(variants, ask, ["ndcg@10", "recall@100"])
    report["mode"], report["fusion"] = mode.value, fusion.value
    return report


def _ask(
    service: MemoryService,
    docs_of: dict[str, list[str]],
    queries: dict[str, str],
    judgements: dict[str, dict[str, float]],
) -> dict[str, Any]:
    ndcg = recall = 0.0
    seconds: list[float] = []
    per_question: dict[str, dict[str, float]] = {}
    for query_id, text in queries.items():
        began = time.perf_counter()
        response = service.remember(
            RecallRequest(query=text[:2000], limit=100),
            Caller(principal="bench", default_scope=SCOPE),
        )
        seconds.append(time.perf_counter() - began)
        ranked = [doc for r in response.results for doc in docs_of.get(r.id, [])]
        grades = judgements[query_id]
        scores = {
            "ndcg@10": ndcg_at(ranked, grades, 10),
            "recall@100": recall_at(ranked, {d for d, g in grades.items() if g > 0}, 100),
        }
        per_question[query_id] = scores
        ndcg += scores["ndcg@10"]
        recall += scores["recall@100"]
    n = len(queries)
    return {
        "queries": n,
        "ndcg@10": round(ndcg / n, 4) if n else 0.0,
        "recall@100": round(recall / n, 4) if n else 0.0,
        **latency_ms(seconds),
        "per_question": per_question,
    }
