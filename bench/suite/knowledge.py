"""``hivemem bench knowledge``: ingest a folder of real documents, then ask questions about them.

The ingest goes into a fresh store in one of two shapes. ``embedded``: through the knowledge service
exactly as ``hivemem knowledge ingest`` does (guards, parser, chunking, embedding batched across
documents, one write per document), timed per phase. ``celery``: as one ingest job on real workers
over a private Redis, with the workers' phase times from the job's result. The embedder alone is
then timed on the same chunk texts, in the same run (sorted by length, in batches, as many at once
as the server runs), so ``chunks_per_s`` can be read against the model's own speed. Each question
is searched (limit 10) and counts as found at rank k when one of its evidence strings appears in
the k-th chunk's text (case-insensitive, whitespace collapsed); the report names the questions
whose evidence no chunk holds at all.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.data_files import json_lines, reading
from bench.suite.throughput import raw_forward_per_s, shape_service
from hivemem.config import Settings
from hivemem.jobs import JobState
from hivemem.knowledge_schemas import IngestRequest, KnowledgeSearchRequest
from search.base import ChunkFilter
from workers.documents.sources import FileAccess
from workers.knowledge_jobs import PhaseTimes
from workers.models.embed_tuning import EmbedTuning

__all__ = ["evidence_not_in", "found_at", "load_questions", "run_knowledge"]

SCOPE = "bench/knowledge"
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _is_question(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("question"), str):
        return False
    evidence = entry.get("evidence")
    return isinstance(evidence, list) and all(isinstance(e, str) for e in evidence)


def load_questions(path: Path) -> list[dict[str, Any]]:
    """The questions of a JSONL file: ``question``, ``evidence`` (a list of strings), optional ``format``."""
    questions = []
    # Lines end at line feeds only, as in the other data files: JSON may hold U+2028 unescaped.
    with reading(path, "a question file (JSON lines)"), path.open(encoding="utf-8") as handle:
        for number, entry in enumerate(json_lines(handle), 1):
            if not _is_question(entry):
                raise ValueError(f"question {number} needs `question` (text) and `evidence` (a list of strings)")
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


def evidence_not_in(questions: list[dict[str, Any]], chunk_texts: list[str]) -> list[str]:
    """The questions none of whose evidence strings is in any chunk: a question file that does not
    match the corpus, or a reader that lost the text. They stay scored, as misses (a reader that
    loses text must lower the score), and the report names them so a miss can be told from them."""
    bodies = [_normal(text) for text in chunk_texts]
    return [
        entry["question"]
        for entry in questions
        if not any(_normal(e) in body for e in entry["evidence"] for body in bodies)
    ]


@dataclass(frozen=True, slots=True)
class _Ingested:
    """What one shape's ingest gave: its report counts, its wall time and its seconds per phase."""

    documents: int
    indexed: int
    failed: list[dict[str, Any]]
    seconds: float
    by_phase: dict[str, float]


def _ingest_in_process(service: MemoryService, caller: Caller, corpus: Path) -> _Ingested:
    """The embedded shape: the knowledge service indexes the folder in this process, as the CLI does."""
    times = PhaseTimes()
    began = time.perf_counter()
    report = service.knowledge.ingest(
        IngestRequest(paths=[str(corpus)], scope=SCOPE), caller, FileAccess(), times=times
    )
    return _Ingested(
        report.documents,
        report.indexed,
        [f.model_dump() for f in report.failures],
        time.perf_counter() - began,
        times.seconds,
    )


def _ingest_on_workers(service: MemoryService, caller: Caller, corpus: Path) -> _Ingested:
    """The distributed shape: one ingest job, one task per document on the workers' ``ingest`` queue;
    the phase times are the workers' own, summed over documents (worker-seconds)."""
    began = time.perf_counter()
    job = service.knowledge.ingest_job(IngestRequest(paths=[str(corpus)], scope=SCOPE), caller, FileAccess())
    board = service.runner.board
    while not (done := board.get(job.id)).state.final:
        time.sleep(0.2)
    seconds = time.perf_counter() - began
    if done.state is not JobState.DONE or done.result is None:
        raise RuntimeError(f"the ingest job ended {done.state.value}: {done.error}")
    result = done.result
    failed = [{"source": i["id"], "error": i.get("error")} for i in result["items"] if i["outcome"] == "failed"]
    return _Ingested(done.total, int(result["indexed"]), failed, seconds, dict(result["seconds_by_phase"]))


@contextmanager
def _service(settings: Settings, shape: str, workers: int, folder: Path) -> Iterator[MemoryService]:
    if shape == "embedded":
        run_settings = settings.model_copy(update={"store_url": f"sqlite:///{folder / 'bench.db'}", "broker_url": ""})
        service = MemoryService.from_settings(run_settings)
        try:
            yield service
        finally:
            service.close()
        return
    with shape_service(settings, shape, workers, folder) as service:
        yield service


def run_knowledge(
    settings: Settings, *, corpus: Path, questions_file: Path, shape: str = "embedded", workers: int = 2
) -> dict[str, Any]:
    """Ingest ``corpus`` in ``shape`` (``embedded``, or ``celery`` on ``workers`` real workers), ask
    every question of ``questions_file``; the report."""
    questions = load_questions(questions_file)
    with (
        tempfile.TemporaryDirectory(prefix="hivemem-bench-knowledge-") as folder,
        _service(settings, shape, workers, Path(folder)) as service,
    ):
        service.parts.warm_up()
        caller = Caller(principal="bench", default_scope=SCOPE)
        print(f"ingesting {corpus} ({shape})", file=sys.stderr)
        ingested = (_ingest_in_process if shape == "embedded" else _ingest_on_workers)(service, caller, corpus)
        chunks = list(service.store.scan_chunks(ChunkFilter(scopes=[SCOPE])))
        texts = [chunk.context for chunk in chunks]
        absent = evidence_not_in(questions, [chunk.text for chunk in chunks])
        for question in absent:
            print(f"warning: no chunk holds the evidence of {question!r}; it can only miss", file=sys.stderr)
        inner = getattr(service.embedder, "inner", service.embedder)
        raw_per_s = raw_forward_per_s(inner, texts, EmbedTuning().embed_batch_size, documents=True) if texts else None
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
        model = service.embedder.model_id

    def hit_at(k: int, found: list[int | None]) -> float:
        return round(sum(1 for r in found if r is not None and r <= k) / max(1, len(found)), 4)

    return {
        "bench": "knowledge",
        "shape": shape,
        "workers": workers if shape != "embedded" else 0,
        "corpus": str(corpus),
        "questions": len(questions),
        "hit@1": hit_at(1, ranks),
        "hit@5": hit_at(5, ranks),
        "hit@10": hit_at(10, ranks),
        "mrr": round(sum(1 / r for r in ranks if r is not None) / max(1, len(ranks)), 4),
        "per_format_hit@5": {fmt: hit_at(5, found) for fmt, found in sorted(by_format.items())},
        "evidence_not_in_corpus": absent,
        "per_question": {
            entry["question"]: {
                "hit@1": hit_at(1, [rank]),
                "hit@5": hit_at(5, [rank]),
                "hit@10": hit_at(10, [rank]),
                "mrr": 1 / rank if rank else 0.0,
            }
            for entry, rank in zip(questions, ranks, strict=True)
        },
        "documents": ingested.documents,
        "indexed": ingested.indexed,
        "failed": ingested.failed,
        "chunks": len(texts),
        "ingest_s": round(ingested.seconds, 2),
        "docs_per_s": round(ingested.documents / ingested.seconds, 2),
        "chunks_per_s": round(len(texts) / ingested.seconds, 2),
        "raw_embed_chunks_per_s": round(raw_per_s, 2) if raw_per_s else None,
        "seconds_by_phase": {name: round(value, 2) for name, value in ingested.by_phase.items()},
        "model": model,
    }
