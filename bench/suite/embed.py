"""The embedder alone, per device: texts per second, one query's latency, and how closely its
vectors agree with the model's own.

Two sets of texts, as the store embeds them: LoCoMo turns (short, as memories are; the memory
window) and SciFact abstracts (long, as document chunks; the document window). Each device runs
the embedder the product would load there (:func:`workers.models.embed.load_embedder`: on a CPU the ONNX
copy where onnxruntime is installed, on CUDA torch in fp16). Agreement is the cosine between a
device's vectors and torch's fp32 vectors on the CPU over a sample of each set: what fp16 or an
8-bit copy changes.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.suite.data_files import json_lines, reading
from bench.suite.metrics import percentile
from bench.suite.rerank_pool import conversation_turns
from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.errors import ConfigError
from workers.models.embed_tuning import EmbedTuning

__all__ = ["embed_texts", "run_embed"]

AGREEMENT_SAMPLE = 64


def embed_texts(data: Path, count: int, seed: int = 0) -> dict[str, list[str]]:
    """Up to ``count`` texts of each set found under ``data`` (``memories``: LoCoMo turns,
    ``documents``: SciFact abstracts), a seeded sample, and ``queries``: LoCoMo questions."""
    rng = random.Random(seed)
    found: dict[str, list[str]] = {}
    locomo = data / "locomo" / "locomo-dev.json"
    if locomo.is_file():
        with reading(locomo, "a LoCoMo file (JSON, a list of conversations)"):
            conversations = json.loads(locomo.read_text(encoding="utf-8"))
            turns = [turn for conversation in conversations for turn in conversation_turns(conversation)]
            questions = [str(qa["question"]) for conversation in conversations for qa in conversation["qa"]]
        found["memories"] = rng.sample(turns, min(count, len(turns)))
        found["queries"] = rng.sample(questions, min(count, len(questions)))
    corpus = data / "scifact" / "corpus.jsonl"
    if corpus.is_file():
        with corpus.open(encoding="utf-8") as handle, reading(corpus, "a BEIR corpus (JSON lines)"):
            abstracts = [f"{doc['title']}. {doc['text']}" for doc in json_lines(handle)]
        found["documents"] = rng.sample(abstracts, min(count, len(abstracts)))
    if not found:
        raise ConfigError(f"--data {data}: neither locomo/locomo-dev.json nor scifact/corpus.jsonl is there")
    return found


def _cosines(vectors: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> dict[str, float]:
    # Both sides are unit length (the Embedder contract): the dot product is the cosine.
    values = [math.fsum(a * b for a, b in zip(v, r, strict=True)) for v, r in zip(vectors, reference, strict=True)]
    return {"min": round(min(values), 5), "mean": round(statistics.fmean(values), 5)}


def _embed(embedder: Embedder, kind: str, texts: Sequence[str]) -> list[list[float]]:
    return embedder.embed_documents(texts) if kind == "documents" else embedder.embed_passages(texts)


def _device_name(device: str) -> str:
    if device == "cpu":
        import platform

        return platform.processor() or platform.machine()
    import torch

    if not torch.cuda.is_available():
        raise ConfigError("--device cuda: torch sees no CUDA device here")
    return str(torch.cuda.get_device_name(0))


def run_embed(
    settings: Settings,
    *,
    data: Path,
    devices: Sequence[str] = ("cpu",),
    batch_sizes: Sequence[int] = (),
    texts: int = 2000,
    queries: int = 100,
    warmup: int = 32,
    progress: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> dict[str, Any]:
    """Embed the same texts on each device (and batch size, default the setting's); the report of each.

    ``warmup`` texts of each set (and as many queries) go through first, untimed: CUDA loads its
    kernels on first use and a new batch shape costs more the first time; a few hundred texts
    bring a GPU to its steady rate.
    """
    from workers.models.embed import load_embedder

    sets = embed_texts(data, max(texts, queries))
    names = [device for device in devices if device != "cpu"]
    described = {device: _device_name(device) for device in ("cpu", *names)}  # a missing GPU fails first
    # One call at a time, so each gets every core (onnxruntime's default is one thread a call, for
    # a server's many calls at once), as the rerank-pool bench gives its model.
    settings = settings.model_copy(update={"embed_threads": settings.embed_threads or os.cpu_count() or 1})
    reference_settings = settings.model_copy(update={"embed_device": "cpu"})
    reference_embedder = load_embedder(reference_settings, EmbedTuning(embed_runtime="torch"))
    kinds = [kind for kind in ("memories", "documents") if kind in sets]
    reference = {kind: _embed(reference_embedder, kind, sets[kind][:AGREEMENT_SAMPLE]) for kind in kinds}
    report: dict[str, Any] = {"model": reference_embedder.model_id, "runs": []}
    for device in devices:
        for batch_size in batch_sizes or (EmbedTuning().embed_batch_size,):
            embedder = load_embedder(
                settings.model_copy(update={"embed_device": device}), EmbedTuning(embed_batch_size=batch_size)
            )
            for kind in kinds:
                _embed(embedder, kind, sets[kind][-warmup:])  # the sample's far end: other texts, same kind
            for query in sets.get("queries", [])[-warmup:]:
                embedder.embed_queries([query])
            run: dict[str, Any] = {
                "device": device,
                "device_name": described[device],
                "runtime": type(embedder).__name__,
                "batch_size": batch_size,
            }
            for kind in kinds:
                measured = sets[kind][:texts]
                began = time.perf_counter()
                _embed(embedder, kind, measured)
                seconds = time.perf_counter() - began
                run[kind] = {
                    "texts": len(measured),
                    "median_chars": statistics.median(len(t) for t in measured),
                    "texts_per_s": round(len(measured) / seconds, 1),
                    "agreement_with_fp32_cpu": _cosines(
                        _embed(embedder, kind, sets[kind][:AGREEMENT_SAMPLE]), reference[kind]
                    ),
                }
            if "queries" in sets:
                timings = []
                for query in sets["queries"][:queries]:
                    began = time.perf_counter()
                    embedder.embed_queries([query])
                    timings.append((time.perf_counter() - began) * 1000)
                ordered = sorted(timings)
                run["query"] = {
                    "queries": len(ordered),
                    "p50_ms": round(statistics.median(ordered), 2),
                    "p95_ms": round(percentile(ordered, 0.95), 2),
                }
            progress(f"embed: {json.dumps(run)}")
            report["runs"].append(run)
    return report
