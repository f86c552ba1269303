"""The rerank pool's round trip: gateway → Redis → ``hivemem worker --queues rerank`` → gateway.

The same requests (a LoCoMo question with 30 turns of its conversation, a SciFact claim with 30
abstracts) are scored one at a time in this process and through a private pool on this machine (a
``redis-server`` and one worker on the ``rerank`` queue, loading the same model on the same device);
the difference is what the pool adds: the broker, the worker's task handling and the result backend.

Without ``--model`` the model is a cross-encoder of the shape of cross-encoder/ms-marco-MiniLM-L-6-v2:
the packaged all-MiniLM-L6-v2 encoder under an untrained one-logit head. Its scores mean nothing (no
trained cross-encoder can be had offline); what it costs is what a model of that size costs.
``--shape LAYERSxHIDDEN`` measures an untrained cross-encoder of another size the same way.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.suite.data_files import json_lines, reading
from bench.suite.local_cluster import RedisServer, WorkerProcess, redis_server_binary
from bench.suite.metrics import percentile
from bench.suite.throughput import settings_env
from hivemem.config import Settings
from hivemem.errors import ConfigError
from hivemem.rerank import Reranker

__all__ = [
    "conversation_turns",
    "minilm_shaped_cross_encoder",
    "rerank_requests",
    "run_rerank_pool",
    "untrained_cross_encoder",
]

Request = tuple[str, list[str]]


def minilm_shaped_cross_encoder(folder: Path) -> Path:
    """A cross-encoder folder of ms-marco-MiniLM-L-6-v2's shape in ``folder`` (made once): the
    packaged MiniLM's encoder and tokenizer under a randomly initialised one-logit head (seed 0)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from workers.models.embed import packaged_model_path

    source = str(packaged_model_path())
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(source, num_labels=1)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(source).save_pretrained(str(folder))
    return folder


def untrained_cross_encoder(folder: Path, layers: int, hidden: int) -> Path:
    """A randomly initialised (seed 0) BERT cross-encoder of ``layers`` × ``hidden`` in ``folder``
    (made once), under the packaged MiniLM's tokenizer: what a model of that size costs, with no
    weights to be had (24 × 1024 is the size of bge-reranker-v2-m3 and bge-reranker-large)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from workers.models.embed import packaged_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(packaged_model_path()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=4 * hidden,
        max_position_embeddings=512,
    )
    config.num_labels = 1  # one logit: the score
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def conversation_turns(conversation: dict[str, Any]) -> list[str]:
    """A LoCoMo conversation's turns, each as ``speaker: text``, in order."""
    sessions = conversation["conversation"]
    return [
        f"{turn['speaker']}: {turn['text']}"
        for key, session in sessions.items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
        if turn.get("text")
    ]


def rerank_requests(data: Path, top_n: int, count: int, seed: int = 0) -> dict[str, list[Request]]:
    """Up to ``count`` requests of ``top_n`` passages from each data set found under ``data``:
    ``locomo`` (a question and turns of its conversation) and ``scifact`` (a claim and abstracts)."""
    rng = random.Random(seed)
    found: dict[str, list[Request]] = {}
    locomo = data / "locomo" / "locomo-dev.json"
    if locomo.is_file():
        requests: list[Request] = []
        with reading(locomo, "a LoCoMo file (JSON, a list of conversations)"):
            for conversation in json.loads(locomo.read_text(encoding="utf-8")):
                turns = conversation_turns(conversation)
                for qa in conversation["qa"]:
                    if len(turns) >= top_n:
                        requests.append((str(qa["question"]), rng.sample(turns, top_n)))
        rng.shuffle(requests)
        found["locomo"] = requests[:count]
    scifact = data / "scifact"
    if (scifact / "corpus.jsonl").is_file() and (scifact / "queries.jsonl").is_file():
        corpus, queries = scifact / "corpus.jsonl", scifact / "queries.jsonl"
        with corpus.open(encoding="utf-8") as handle, reading(corpus, "a BEIR corpus (JSON lines)"):
            abstracts = [f"{doc['title']}. {doc['text']}" for doc in json_lines(handle)]
        with queries.open(encoding="utf-8") as handle, reading(queries, "a BEIR queries file (JSON lines)"):
            claims = [str(query["text"]) for query in json_lines(handle)]
        rng.shuffle(claims)
        found["scifact"] = [(claim, rng.sample(abstracts, top_n)) for claim in claims[:count]]
    if not found:
        raise ConfigError(f"--data {data}: neither locomo/locomo-dev.json nor scifact/ is there")
    return found


def _milliseconds(reranker: Reranker, requests: Sequence[Request]) -> list[float]:
    timings = []
    for query, passages in requests:
        began = time.perf_counter()
        scores = reranker.score(query, passages)
        timings.append((time.perf_counter() - began) * 1000)
        if len(scores) != len(passages):
            raise RuntimeError(f"{reranker.model_id} answered {len(scores)} scores for {len(passages)} passages")
    return timings


def _summary(timings: Sequence[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(percentile(ordered, 0.95), 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
    }


def run_rerank_pool(
    settings: Settings,
    *,
    data: Path,
    model: str | None = None,
    shape: tuple[int, int] | None = None,
    device: str = "cpu",
    top_n: int = 30,
    requests: int = 100,
    warmup: int = 5,
    progress: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> dict[str, Any]:
    """Score the same requests in process and through the pool; the report of both, per data set.
    ``model`` names the reranker (``HIVEMEM_RERANK_MODEL``'s forms); without it, ``shape`` (layers,
    hidden size) makes an untrained cross-encoder of that size, and without both the MiniLM-shaped one."""
    from workers.models.rerankers import load_reranker
    from workers.rerank_pool import PoolReranker
    from workers.rerank_pool_tuning import RerankPoolTuning

    # The data first: a file of another shape is refused before a model or a server is made.
    sets = rerank_requests(data, top_n, requests + warmup)
    binary = redis_server_binary()
    if binary is None:
        raise ConfigError("the rerank pool needs redis-server on PATH (apt-get install redis-server)")
    made = settings.data_dir.expanduser() / "bench"
    if model is None and shape is not None:
        layers, hidden = shape
        model = "cross:" + str(untrained_cross_encoder(made / f"cross-untrained-{layers}x{hidden}", layers, hidden))
    elif model is None:
        model = "cross:" + str(minilm_shaped_cross_encoder(made / "cross-minilm-l6"))
    folder = Path(tempfile.mkdtemp(prefix="hivemem-rerank-pool-"))
    redis_server = RedisServer(binary, folder)
    redis_server.start()
    worker: WorkerProcess | None = None
    try:
        configured = settings.model_copy(
            update={
                "rerank_model": model,
                "embed_device": device,
                # One worker of one pool process takes every core (hivemem worker splits them between
                # its pool processes): this process scores with as many, so the two compare.
                "embed_threads": settings.embed_threads or os.cpu_count() or 1,
                "broker_url": redis_server.url,
            }
        )
        in_process = load_reranker(configured)
        assert in_process is not None
        worker = WorkerProcess(settings_env(configured), cwd=folder, log_path=folder / "rerank-worker.log")
        progress(f"rerank pool: one worker on the rerank queue ({device}), model {model}")
        worker.start(queues="rerank", concurrency=1)
        # The bench measures the round trip, not the deadline: nothing is cut short.
        pool = PoolReranker(
            configured.model_copy(update={"rerank_pool": True}), tuning=RerankPoolTuning(rerank_deadline_ms=60_000)
        )
        report: dict[str, Any] = {"model": model, "device": device, "top_n": top_n, "sets": {}}
        for name, asked in sets.items():
            first = min(warmup, len(asked) // 2)  # a small data set keeps half for measuring
            warm, measured = asked[:first], asked[first:]
            _milliseconds(in_process, warm)  # loads the model here
            _milliseconds(pool, warm)  # and in the worker's pool process
            local = _milliseconds(in_process, measured)
            remote = _milliseconds(pool, measured)
            passage_chars = statistics.median(len(p) for _, passages in measured for p in passages)
            report["sets"][name] = {
                "requests": len(measured),
                "median_passage_chars": passage_chars,
                "in_process": _summary(local),
                "pool_round_trip": _summary(remote),
                "pool_added_p50_ms": round(statistics.median(r - lo for r, lo in zip(remote, local, strict=True)), 2),
            }
            progress(f"  {name}: in process {_summary(local)}, through the pool {_summary(remote)}")
    except BaseException:
        progress(f"rerank pool: the worker's log and Redis's files are kept in {folder}")
        raise
    finally:
        if worker is not None:
            worker.stop()
        redis_server.stop()
    shutil.rmtree(folder, ignore_errors=True)  # a run that succeeded leaves nothing behind
    return report
