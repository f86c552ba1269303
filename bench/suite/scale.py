"""``hivemem bench scale``: what recall costs as the store grows, from 10k to 1M memories.

Texts are real: the sentences of the SciFact abstracts, embedded by the configured model (cached
under ``DATA_DIR/bench``, so reruns embed nothing). Past that count, memory ``i`` is a near-copy of
real text ``i mod real``: its content carries a copy mark and its vector is the real vector plus a
little Gaussian noise (cosine ~0.97 to the original), so any index meets data shaped like real data,
with the same crowding of near neighbours. Queries are the SciFact claims, embedded at recall time.

Two layouts: every memory in one scope, and the same memories spread over 100 scopes (a recall then
asks one scope, plus global, as a project's agent does). Sizes grow one store in place: 10k, then
100k, then 1M, each measured in a fresh process that opens the file as ``hivemem serve`` would.

Measured per size: build time (the store's batched write path, embedding excluded: the vectors are
precomputed), index load at open, query embedding alone, recall p50/p95/p99 through the service with
1 and with 16 clients, recall@10 of the vector leg against exact search, RSS and disk per 100k.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from api.process.memory import tune_allocator
from bench.suite.data_files import json_lines, reading
from bench.suite.metrics import percentile
from bench.suite.throughput import timed_calls
from bench.suite.vectors_key import vectors_key
from hivemem.config import Settings
from hivemem.embedding import parallel_calls
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import ConfigError
from hivemem.hashing import content_hash
from hivemem.limits import printable
from hivemem.model import Memory, MemoryType, Source, embedding_text
from workers.models.embed import load_embedder
from workers.models.embed_tuning import EmbedTuning

__all__ = ["run_scale"]

SCOPE_PREFIX = "bench/scale"
_NOISE = 0.012  # per dimension; on 384-d unit vectors a near-copy keeps a cosine of about 0.97
_WRITE_CHUNK = 2_000
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")

F32 = npt.NDArray[np.float32]


def _ms(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p95_ms": round(percentile(values, 0.95) * 1000, 2),
        "p99_ms": round(percentile(values, 0.99) * 1000, 2),
    }


def load_texts(data: Path, count: int) -> list[tuple[str, str]]:
    """Up to ``count`` (title, sentence) pairs from the SciFact abstracts, in corpus order."""
    corpus = data / "scifact" / "corpus.jsonl"
    if not corpus.is_file():
        raise ConfigError(f"{corpus} is missing: pass --data with the folder holding scifact/corpus.jsonl")
    texts: list[tuple[str, str]] = []
    seen: set[str] = set()
    with corpus.open(encoding="utf-8") as handle, reading(corpus, "a BEIR corpus (JSON lines)"):
        for doc in json_lines(handle):
            # A few abstracts carry C1 control characters (mis-decoded quotes and dashes).
            title = " ".join(printable(str(doc.get("title") or doc["_id"])).split())[:120]
            for sentence in _SENTENCE.split(" ".join(printable(str(doc.get("text") or "")).split())):
                if 40 <= len(sentence) <= 600 and sentence not in seen:
                    seen.add(sentence)
                    texts.append((title, sentence))
                    if len(texts) == count:
                        return texts
    return texts


def load_queries(data: Path, count: int) -> list[str]:
    """The first ``count`` SciFact claims."""
    queries = data / "scifact" / "queries.jsonl"
    with queries.open(encoding="utf-8") as handle, reading(queries, "a BEIR queries file (JSON lines)"):
        return [str(query["text"]) for query, _ in zip(json_lines(handle), range(count), strict=False)]


def _embedded(settings: Settings, texts: Sequence[str], cache: Path, kind: str) -> F32:
    """Vectors of ``texts`` by the configured model, cached by content and model."""
    embedder = load_embedder(settings)
    digest = hashlib.sha256(f"{vectors_key(settings, embedder)}:{kind}".encode())
    for text in texts:
        digest.update(text.encode())
    path = cache / f"scale-{kind}-{len(texts)}-{digest.hexdigest()[:16]}.npy"
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    # The model threads a server would run, so every core embeds.
    queued = QueuedEmbedder(embedder, max_batch=EmbedTuning().embed_batch_size, threads=parallel_calls(embedder))
    embed = queued.embed_passages if kind == "passages" else queued.embed_queries
    vectors = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    try:
        for start in range(0, len(texts), 1024):
            vectors[start : start + 1024] = embed(texts[start : start + 1024])
            print(f"  embedded {min(start + 1024, len(texts))}/{len(texts)} {kind}", file=sys.stderr)
    finally:
        queued.close()
    np.save(path, vectors)
    return vectors


def _vectors(base: F32, start: int, stop: int) -> F32:
    """Vectors of memories ``start..stop``: the real ones first, then noisy near-copies.

    The noise of memory ``i`` depends on ``i`` alone (one seeded block per ``_WRITE_CHUNK``), so the
    writer and the exact search agree however each slices the range.
    """
    out = np.empty((stop - start, base.shape[1]), dtype=np.float32)
    for block in range(start // _WRITE_CHUNK, (stop - 1) // _WRITE_CHUNK + 1):
        first, last = block * _WRITE_CHUNK, (block + 1) * _WRITE_CHUNK
        index = np.arange(first, last)
        vectors = base[index % len(base)].copy()
        copies = index >= len(base)
        if copies.any():
            noise = np.random.default_rng(block).normal(0.0, _NOISE, size=(len(index), base.shape[1]))
            vectors[copies] += noise[copies].astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        lo, hi = max(first, start), min(last, stop)
        out[lo - start : hi - start] = vectors[lo - first : hi - first]
    return out


def bench_memory(i: int, texts: Sequence[tuple[str, str]], scope: str, now: datetime, model_id: str) -> Memory:
    """Memory ``i`` of a bench store (no vector yet): real text ``i mod len(texts)``, a copy mark past
    the real count, and an id that ``i`` alone decides."""
    title, sentence = texts[i % len(texts)]
    content = sentence if i < len(texts) else f"{sentence} [copy {i // len(texts)}]"
    return Memory(
        id=str(uuid.UUID(int=i + 1)),
        scope=scope,
        title=title,
        content=content,
        content_hash=content_hash(content),
        memory_type=MemoryType.FACT,
        source=Source.IMPORTED,
        created_at=now,
        updated_at=now,
        embedding_model=model_id,
    )


def _scope(i: int, scopes: int) -> str:
    return f"{SCOPE_PREFIX}/{i % scopes}"


def _build(
    settings: Settings,
    db: str,
    texts: list[tuple[str, str]],
    base: F32,
    queries: F32,
    start: int,
    stop: int,
    scopes: int,
) -> dict[str, Any]:
    """Grow the store from ``start`` to ``stop`` memories; exact top-10 of each query over all of them."""
    from hivemem.model import WriteOutcome
    from hivemem.resolution import Resolution
    from search import open_store

    model_id = load_embedder(settings).model_id
    store = open_store(f"sqlite:///{db}", embedding_model=model_id, dimension=base.shape[1])
    began = time.perf_counter()
    now = datetime.now(UTC)
    for chunk in range(start, stop, _WRITE_CHUNK):
        end = min(chunk + _WRITE_CHUNK, stop)
        vectors = _vectors(base, chunk, end)
        memories = []
        for i, vector in zip(range(chunk, end), vectors, strict=True):
            memory = bench_memory(i, texts, _scope(i, scopes), now, store.embedding_model)
            memory.embedding = vector.tolist()
            memories.append(memory)
        store.write_resolved_many(memories, lambda incoming, _held: Resolution(WriteOutcome.STORED, incoming))
    build_s = time.perf_counter() - began
    store.close()
    return {"build_s": round(build_s, 1), "exact": _exact(base, queries, stop, scopes)}


def _exact(base: F32, queries: F32, size: int, scopes: int, k: int = 10) -> list[list[str]]:
    """Exact top-``k`` ids per query inside its scope (query ``j`` asks scope ``j mod scopes``)."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), k), dtype=np.int64)
    wanted = np.arange(len(queries)) % scopes
    for chunk in range(0, size, 50_000):
        end = min(chunk + 50_000, size)
        scores = queries @ _vectors(base, chunk, end).T
        own = (np.arange(chunk, end) % scopes)[None, :] == wanted[:, None]
        scores[~own] = -np.inf
        both = np.concatenate([best_scores, scores], axis=1)
        ids = np.concatenate([best_ids, np.broadcast_to(np.arange(chunk, end), scores.shape)], axis=1)
        top = np.argsort(-both, axis=1)[:, :k]
        best_scores = np.take_along_axis(both, top, axis=1)
        best_ids = np.take_along_axis(ids, top, axis=1)
    return [[str(uuid.UUID(int=int(i) + 1)) for i in row] for row in best_ids]


def _rss_mb() -> dict[str, float]:
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
        "peak_rss_mb": round(int(fields["VmHWM"].split()[0]) / 1024, 1),
    }


def _measure(
    settings: Settings,
    db: str,
    queries: list[str],
    query_vectors: F32,
    exact: list[list[str]],
    scopes: int,
    rounds: int,
) -> dict[str, Any]:
    """Open the store as a server would, then time recall through the service."""
    from api.services.caller import Caller
    from api.services.memories import MemoryService
    from hivemem.model import GLOBAL_SCOPE
    from hivemem.schemas import RecallRequest
    from search import SearchFilter

    run = settings.model_copy(update={"store_url": f"sqlite:///{db}"})
    tune_allocator()  # as `hivemem serve` does at start
    began = time.perf_counter()
    service = MemoryService.from_settings(run)
    service.parts.warm_up()
    scope0 = _scope(0, scopes)
    service.store.vector_search(query_vectors[0].tolist(), SearchFilter(scopes=[scope0]), 1)  # loads the index
    open_s = time.perf_counter() - began
    gc.collect()
    gc.freeze()  # as `hivemem serve` does after warm-up: long-lived objects leave the collector's scans
    try:
        embed_latency = timed_calls([partial(service.embedder.embed_queries, [q]) for q in queries[:rounds]], 1)[1]
        recall = [
            partial(service.remember, RecallRequest(query=q, limit=10), Caller("bench", _scope(j, scopes)))
            for j, q in enumerate(queries)
        ]
        timed_calls(recall[:20], 1)  # warm the caches the first queries fill
        _, one = timed_calls(recall[:rounds], 1)
        calls16 = (recall * (1 + 4 * rounds // len(recall)))[: 4 * rounds]
        wall16, sixteen = timed_calls(calls16, 16)
        store, legs = service.store, service.recaller.params.candidates_per_leg
        where = [SearchFilter(scopes=[_scope(j, scopes), GLOBAL_SCOPE]) for j in range(rounds)]
        bm25 = timed_calls(
            [partial(store.keyword_search, q, where[j], legs) for j, q in enumerate(queries[:rounds])], 1
        )
        knn = timed_calls(
            [partial(store.vector_search, v.tolist(), where[j], legs) for j, v in enumerate(query_vectors[:rounds])], 1
        )
        overlap = []
        for j, vector in enumerate(query_vectors[: len(exact)]):
            found = service.store.vector_search(vector.tolist(), SearchFilter(scopes=[_scope(j, scopes)]), 10)
            overlap.append(len({c.id for c in found} & set(exact[j])) / max(1, len(exact[j])))
        memories = service.store.count()
        rss = _rss_mb()
    finally:
        service.close()
    disk = sum(Path(db + s).stat().st_size for s in ("", "-wal") if Path(db + s).exists())
    return {
        "memories": memories,
        "open_and_index_load_s": round(open_s, 1),
        "query_embedding": _ms(embed_latency),
        "recall_1_client": _ms(one),
        "bm25_leg": _ms(bm25[1]),
        "vector_leg": _ms(knn[1]),
        "recall_16_clients": {"per_s": round(len(calls16) / wall16, 1), **_ms(sixteen)},
        "vector_recall_at_10_vs_exact": round(statistics.fmean(overlap), 4),
        **rss,
        "disk_mb": round(disk / 2**20, 1),
        "disk_mb_per_100k": round(disk / 2**20 / memories * 100_000, 1),
    }


def _in_child(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """``fn(*args)`` in a fresh process, so each measurement starts as a server does and RSS is its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def run_scale(
    settings: Settings,
    *,
    data: Path,
    sizes: Sequence[int] = (10_000, 100_000, 1_000_000),
    layouts: Sequence[int] = (1, 100),
    real: int = 20_000,
    queries: int = 200,
    folder: Path | None = None,
    progress: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> dict[str, Any]:
    """Build and measure each layout (scope count) at each size; the report as a dict."""
    sizes = sorted(sizes)
    cache = settings.data_dir.expanduser() / "bench"
    cache.mkdir(parents=True, exist_ok=True)
    work = folder or cache
    texts = load_texts(data, real)
    asked = load_queries(data, queries)
    progress(f"scale: {len(texts)} real texts, {len(asked)} queries")
    base = _embedded(settings, [embedding_text(title, sentence) for title, sentence in texts], cache, "passages")
    query_vectors = _embedded(settings, asked, cache, "queries")
    runs = []
    for scopes in layouts:
        db = str(work / f"scale-{scopes}-scopes.db")
        for suffix in ("", "-wal", "-shm"):
            Path(db + suffix).unlink(missing_ok=True)
        built = 0
        for size in sizes:
            progress(f"  {scopes} scope(s): growing to {size} memories")
            grown = _in_child(_build, settings, db, texts, base, query_vectors, built, size, scopes)
            built = size
            progress(f"  {scopes} scope(s), {size} memories: measuring")
            measured = _in_child(_measure, settings, db, asked, query_vectors, grown["exact"], scopes, queries)
            runs.append({"scopes": scopes, "size": size, "build_s": grown["build_s"], **measured})
            progress(f"    {json.dumps(runs[-1])}")
        if not os.environ.get("HIVEMEM_BENCH_KEEP"):
            for suffix in ("", "-wal", "-shm"):
                Path(db + suffix).unlink(missing_ok=True)
    return {
        "bench": "scale",
        "embed_model": load_embedder(settings).model_id,
        "real_texts": len(texts),
        "queries": len(asked),
        "runs": runs,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "date": datetime.now(UTC).date().isoformat(),
    }
