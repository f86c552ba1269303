"""``hivemem bench throughput``: memorize/s and recall latency, embedded and over Celery + Redis.

Both shapes run the real gateway code (:class:`api.services.memories.MemoryService`) against a fresh store
in a temporary folder: embedded, jobs run in the calling threads; distributed, a private
``redis-server`` and N ``hivemem worker`` processes (one pool process each) do them. ``clients``
threads call the service at once, as concurrent HTTP requests would (HTTP itself is not timed).

Phases, each timed on its own: single memorize calls, one bulk memorize, recall queries, and the
ceiling they are judged against: the model's own batched forward pass over the same texts.
"""

from __future__ import annotations

import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.local_cluster import RedisServer, WorkerProcess, redis_server_binary
from bench.suite.metrics import percentile
from bench.suite.tuned import tuned
from hivemem.config import Settings
from hivemem.embedding import Embedder, parallel_calls
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import ConfigError
from hivemem.model import embedding_text
from hivemem.schemas import MemoryCreate, RecallRequest
from workers.models.embed_tuning import EmbedTuning

__all__ = ["recall_queries", "run_throughput", "synthetic_corpus", "timed_calls"]

SCOPE = "bench/throughput"
_COMPONENTS = ["billing", "search", "auth", "ingest", "scheduler", "gateway", "storage", "metrics", "mailer", "cache"]
_EVENTS = ["timed out", "ran out of memory", "returned stale data", "dropped connections", "double-charged"]
_CAUSES = ["a missing index", "an expired certificate", "a retry storm", "clock skew", "a full disk", "a stale lock"]
_FIXES = ["added a composite index", "rotated the certificate", "capped retries with jitter", "enabled NTP"]


def synthetic_corpus(count: int, seed: int = 7) -> list[MemoryCreate]:
    """``count`` distinct incident memories built from a small vocabulary (deterministic)."""
    rng = random.Random(seed)
    memories = []
    for i in range(count):
        component, event = rng.choice(_COMPONENTS), rng.choice(_EVENTS)
        cause, fix = rng.choice(_CAUSES), rng.choice(_FIXES)
        memories.append(
            MemoryCreate(
                title=f"{component} {event} (incident {i})",
                content=f"The {component} service {event} because of {cause}; we {fix}. "
                f"Incident {i}, host node-{i % 97}.",
                tags=[component],
            )
        )
    return memories


def recall_queries(count: int, seed: int = 11) -> list[str]:
    """``count`` questions about the incidents of :func:`synthetic_corpus` (deterministic)."""
    rng = random.Random(seed)
    return [f"why did {rng.choice(_COMPONENTS)} {rng.choice(_EVENTS)}" for _ in range(count)]


def timed_calls(calls: Sequence[Callable[[], object]], clients: int) -> tuple[float, list[float]]:
    """Run ``calls`` from ``clients`` threads; the wall time and each call's latency in seconds."""

    def timed(call: Callable[[], object]) -> float:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        latencies = list(pool.map(timed, calls))
    return time.perf_counter() - start, latencies


def settings_env(settings: Settings) -> dict[str, str]:
    """The settings as ``HIVEMEM_*`` variables, for worker processes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    for name, value in settings.model_dump(mode="json").items():
        if isinstance(value, list):
            value = ",".join(map(str, value))  # list settings read comma lists from the environment
        if value not in (None, ""):
            env[f"HIVEMEM_{name.upper()}"] = str(value)
    return env


@contextmanager
def shape_service(
    settings: Settings, shape: str, workers: int, folder: Path, *, nice: int = 0
) -> Iterator[MemoryService]:
    store = {"store_url": f"sqlite:///{folder / 'throughput.db'}", "data_dir": str(folder)}
    if shape == "embedded":
        embedded = MemoryService.from_settings(
            Settings.model_validate(settings.model_dump() | store | {"broker_url": ""})
        )
        try:
            yield embedded
        finally:
            embedded.close()
        return
    binary = redis_server_binary()
    if binary is None:
        raise ConfigError("the celery shape needs redis-server on PATH (apt-get install redis-server)")
    redis_server = RedisServer(binary, folder)
    redis_server.start()
    processes: list[WorkerProcess] = []
    service: MemoryService | None = None
    try:
        gateway = Settings.model_validate(settings.model_dump() | store | {"broker_url": redis_server.url})
        env = settings_env(gateway)
        # The workers share this machine's cores: split them, as separate hosts would not need to.
        env["HIVEMEM_EMBED_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
        for i in range(workers):
            process = WorkerProcess(env, cwd=folder, log_path=folder / f"worker-{i}.log")
            process.start(concurrency=1, nice=nice)
            processes.append(process)
        # A memorize call waits for its job as long as a loaded shape needs, not the default's seconds.
        with tuned(memorize_wait_s=60.0):
            service = MemoryService.from_settings(gateway)
            yield service
    finally:
        if service is not None:
            service.close()
        for process in processes:
            process.stop()
        redis_server.stop()


def raw_forward_per_s(embedder: Embedder, texts: Sequence[str], batch_size: int, *, documents: bool = False) -> float:
    """The model alone over ``texts``: sorted by length, in batches, as many batches at once as the
    runtime runs well (:func:`hivemem.embedding.parallel_calls`), as the server runs them; texts per
    second. ``documents``: through the document chunks' window (``embed_documents``)."""
    ordered = sorted(texts, key=len)
    batches = [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]
    embed = embedder.embed_documents if documents else embedder.embed_passages
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel_calls(embedder)) as pool:
        list(pool.map(embed, batches))
    return len(texts) / (time.perf_counter() - start)


def run_throughput(
    settings: Settings,
    *,
    shape: str,
    workers: int = 1,
    memories: int = 300,
    bulk: int = 1000,
    queries: int = 300,
    clients: int = 8,
    progress: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> dict[str, Any]:
    """Measure one shape (``embedded`` or ``celery`` with ``workers`` workers); returns the report."""
    if shape not in ("embedded", "celery"):
        raise ConfigError(f"--shape must be embedded or celery, got {shape!r}")
    folder = Path(tempfile.mkdtemp(prefix="hivemem-throughput-"))
    caller = Caller(principal="bench", default_scope=SCOPE)
    corpus = synthetic_corpus(memories + bulk + 8)
    warm, singles, batch = corpus[:8], corpus[8 : 8 + memories], corpus[8 + memories :]
    try:
        with shape_service(settings, shape, workers, folder) as service:
            progress(f"throughput: {shape}, {workers if shape == 'celery' else 0} worker(s), warming up")
            service.parts.warm_up()
            for request in warm:  # loads the model in every worker process that embeds
                service.memorize(request, caller)

            progress(f"  {memories} memorize calls from {clients} clients")
            wall, memorize_latency = timed_calls([partial(service.memorize, r, caller) for r in singles], clients)
            memorize_per_s = memories / wall

            progress(f"  bulk memorize of {bulk}")
            start = time.perf_counter()
            service.memorize_many(batch, caller)
            bulk_per_s = bulk / (time.perf_counter() - start)

            progress(f"  {queries} recalls from {clients} clients")
            recalls = [RecallRequest(query=q, limit=10) for q in recall_queries(queries)]
            wall, recall_latency = timed_calls([partial(service.remember, r, caller) for r in recalls], clients)
            stored = service.store.count([SCOPE])

            # The ceiling: the model alone over the same texts, in this process (in the celery shape
            # the workers embed, but the model is the same).
            progress("  raw batched forward pass over the same texts")
            inner = service.embedder.inner if isinstance(service.embedder, QueuedEmbedder) else service.embedder
            texts = [embedding_text(r.title, r.content) for r in singles + batch]
            raw_per_s = raw_forward_per_s(inner, texts, EmbedTuning().embed_batch_size)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ms = 1000.0
    return {
        "bench": "throughput",
        "shape": shape,
        "workers": workers if shape == "celery" else 0,
        "clients": clients,
        "embed_model": service.embedder.model_id,
        "memorize_calls": memories,
        "memorize_per_s": round(memorize_per_s, 1),
        "memorize_p50_ms": round(statistics.median(memorize_latency) * ms, 1),
        "memorize_p95_ms": round(percentile(memorize_latency, 0.95) * ms, 1),
        "bulk_memories": bulk,
        "bulk_per_s": round(bulk_per_s, 1),
        "raw_forward_per_s": round(raw_per_s, 1),
        "memorize_vs_raw": round(memorize_per_s / raw_per_s, 3),
        "bulk_vs_raw": round(bulk_per_s / raw_per_s, 3),
        "recall_queries": queries,
        "recall_per_s": round(queries / wall, 1),
        "recall_p50_ms": round(statistics.median(recall_latency) * ms, 1),
        "recall_p95_ms": round(percentile(recall_latency, 0.95) * ms, 1),
        "recall_p99_ms": round(percentile(recall_latency, 0.99) * ms, 1),
        "memories_stored": stored,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "date": datetime.now(UTC).date().isoformat(),
    }
