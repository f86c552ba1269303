"""``hivemem bench knowledge``: ingest a folder of real documents, then ask questions about them.

The ingest goes through the knowledge service exactly as ``hivemem knowledge ingest`` does (guards,
parser, chunking, embedding batched across documents, one write per document) into a fresh store,
timed per phase. The embedder alone is then timed on the same chunk texts, in the same run, so
``chunks_per_s`` can be read against the model's own speed. Each question is searched (limit 10)
and counts as found at rank k when one of its evidence strings appears in the k-th chunk's text
(case-insensitive, whitespace collapsed).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from api.service import Caller, MemoryService
from hivemem.config import Settings
from hivemem.knowledge_schemas import IngestRequest, KnowledgeSearchRequest
from search.base import ChunkFilter
from workers.documents.sources import FileAccess
from workers.embed import load_embedder
from workers.knowledge_jobs import PhaseTimes

__all__ = ["found_at", "load_questions", "run_knowledge"]

SCOPE = "bench/knowledge"
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def load_questions(path: Path) -> list[dict[str, Any]]:
    """The questions of a JSONL file: ``question``, ``evidence`` (a list of strings), optional ``format``."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        if not isinstance(entry.get("question"), str) or not isinstance(entry.get("evidence"), list):
            raise ValueError(f"{path}:{number}: needs `question` (text) and `evidence` (a list of strings)")
        questions.append(entry)
    return questions


def found_at(texts: list[str], evidence: list[str]) -> int | None:
    """The 1-based rank of the first text holding one of the evidence strings, or None."""
    wanted = [_normal(e) for e in evidence]
    for rank, text in enumerate(texts, 1):
        body = _normal(text)
        if any(w in body for w in wanted):
            return rank
    return None


def run_knowledge(settings: Settings, *, corpus: Path, questions_file: Path) -> dict[str, Any]:
    """Ingest ``corpus``, ask every question of ``questions_file``; the report."""
    questions = load_questions(questions_file)
    embedder = load_embedder(settings)
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-knowledge-") as folder:
        run_settings = settings.model_copy(update={"store_url": f"sqlite:///{Path(folder) / 'bench.db'}"})
        service = MemoryService.from_settings(run_settings, embedder=embedder)
        try:
            service.warm_up()
            caller = Caller(principal="bench", default_scope=SCOPE)
            times = PhaseTimes()
            print(f"ingesting {corpus}", file=sys.stderr)
            began = time.perf_counter()
            report = service.knowledge.ingest(
                IngestRequest(paths=[str(corpus)], scope=SCOPE), caller, FileAccess(), times=times
            )
            ingest_s = time.perf_counter() - began
            texts = [chunk.context for chunk in service.store.scan_chunks(ChunkFilter(scopes=[SCOPE]))]
            inner = getattr(service.embedder, "inner", service.embedder)
            began = time.perf_counter()
            inner.embed_passages(texts)
            raw_s = time.perf_counter() - began
            formats = {s.uri: s.format.value for s in service.store.sources([SCOPE])}
            ranks: list[int | None] = []
            by_format: dict[str, list[int | None]] = defaultdict(list)
            print(f"asking {len(questions)} questions", file=sys.stderr)
            for entry in questions:
                hits = service.knowledge.search(
                    KnowledgeSearchRequest(query=entry["question"], scope=SCOPE, limit=10), caller, FileAccess()
                ).results
                rank = found_at([hit.text for hit in hits], entry["evidence"])
                ranks.append(rank)
                fmt = entry.get("format") or (formats.get(hits[0].source, "?") if hits else "?")
                by_format[fmt].append(rank)
        finally:
            service.close()

    def hit_at(k: int, found: list[int | None]) -> float:
        return round(sum(1 for r in found if r is not None and r <= k) / max(1, len(found)), 4)

    return {
        "bench": "knowledge",
        "corpus": str(corpus),
        "questions": len(questions),
        "hit@1": hit_at(1, ranks),
        "hit@5": hit_at(5, ranks),
        "hit@10": hit_at(10, ranks),
        "mrr": round(sum(1 / r for r in ranks if r is not None) / max(1, len(ranks)), 4),
        "per_format_hit@5": {fmt: hit_at(5, found) for fmt, found in sorted(by_format.items())},
        "documents": report.documents,
        "indexed": report.indexed,
        "failed": [f.model_dump() for f in report.failures],
        "chunks": len(texts),
        "ingest_s": round(ingest_s, 2),
        "docs_per_s": round(report.documents / ingest_s, 2),
        "chunks_per_s": round(len(texts) / ingest_s, 2),
        "raw_embed_chunks_per_s": round(len(texts) / raw_s, 2) if raw_s else None,
        "seconds_by_phase": {name: round(value, 2) for name, value in times.seconds.items()},
        "model": embedder.model_id,
    }
