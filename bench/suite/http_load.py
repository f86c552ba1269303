"""``hivemem bench http-load``: a real ``hivemem serve`` under load over HTTP, as clients meet it.

Two measurements on one server (the embedded default: SQLite and the default model), seeded with
``memories`` memories (with ``opensearch``, the mixed load runs again, in the same run, on a second
server storing in that cluster, seeded the same way):

- **mixed**: ``clients`` threads, each call a recall (70 %) or a memorize (30 %), for ``calls``
  calls; the p50/p95/p99 of each kind.
- **upload**: ``upload_clients`` threads recall while the server is idle, then while it indexes
  one uploaded document (``PUT /v1/knowledge/documents``; a large one is a background job) until
  the job is done. The server's resident memory is read from ``/proc`` all along: before the
  upload, its peak, and once the job is done.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.suite.cli_latency import wait_ready
from bench.suite.latency import latencies, latency_summary
from bench.suite.local_cluster import free_port, hivemem_command
from bench.suite.throughput import recall_queries, synthetic_corpus

__all__ = ["run_http_load"]

SCOPE = "bench/http-load"
_QUERIES = recall_queries(500)
_READY_WAIT_S = 600.0  # a first start exports the ONNX copy of the model


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@contextmanager
def _server(data_dir: Path, env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    process = subprocess.Popen(
        [*hivemem_command(), "serve", "--port", str(port)],
        env={**clean, "HIVEMEM_DATA_DIR": str(data_dir), "HIVEMEM_RATE_LIMIT_PER_MIN": "0", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, _READY_WAIT_S)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def _recall(http: httpx.Client, rng: random.Random) -> None:
    query = rng.choice(_QUERIES)
    http.post("/v1/remember", json={"query": query, "scope": SCOPE}).raise_for_status()


def _seed(url: str, memories: int) -> None:
    corpus = [m.model_dump(mode="json", exclude_none=True) | {"scope": SCOPE} for m in synthetic_corpus(memories)]
    with httpx.Client(base_url=url, timeout=600) as http:
        for start in range(0, len(corpus), 1000):
            body = {"memories": corpus[start : start + 1000]}
            accepted = http.post("/v1/memories/bulk", json=body)
            accepted.raise_for_status()
            _wait_job(http, accepted.json()["job_id"])


def _wait_job(http: httpx.Client, job_id: str) -> dict[str, Any]:
    while True:
        job: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.5)


def _mixed(url: str, clients: int, calls: int) -> dict[str, Any]:
    recalls: list[float] = []
    writes: list[float] = []
    counter = iter(range(calls))
    lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=url, timeout=600) as http:
            while True:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                began = time.perf_counter()
                if rng.random() < 0.7:
                    _recall(http, rng)
                    recalls.append(time.perf_counter() - began)
                else:
                    body = {"title": f"Note {seed}-{n}", "content": f"Client {seed} noted step {n} of the rollout."}
                    http.post("/v1/memories", json=body | {"scope": SCOPE}).raise_for_status()
                    writes.append(time.perf_counter() - began)

    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        for future in [pool.submit(client, i) for i in range(clients)]:
            future.result()
    elapsed = time.perf_counter() - began
    recall, memorize = latency_summary(recalls), latency_summary(writes)
    return {
        "clients": clients,
        "calls": calls,
        "seconds": round(elapsed, 1),
        "recall": recall,
        "memorize": memorize,
        "recall_p99_over_p95": round(recall["p99_ms"] / recall["p95_ms"], 2) if recalls else None,
    }


def _recalling(url: str, clients: int, until: Callable[[int], bool]) -> list[float]:
    """Recall latencies from ``clients`` threads over one connection pool, until ``until(calls)``."""
    rng = random.Random(1)
    with httpx.Client(base_url=url, timeout=600) as http:
        return latencies(lambda: _recall(http, rng), clients, until)


def _on_opensearch(
    url: str, env: dict[str, str], memories: int, clients: int, calls: int, rounds: int
) -> dict[str, Any]:
    """The mixed load on a server storing in the cluster at ``url``, in a fresh index dropped after."""
    index = f"bench-http-load-{os.getpid()}-{int(time.time())}"
    cluster = {"HIVEMEM_STORE_URL": f"{url.rstrip('/')}/?index={index}", "HIVEMEM_OPENSEARCH_REPLICAS": "0"}
    with tempfile.TemporaryDirectory(prefix="hivemem-http-load-") as folder:
        with _server(Path(folder), env | cluster) as (server, _):
            _seed(server, memories)
            mixed = [_mixed(server, clients, calls) for _ in range(rounds)]
        _drop(cluster["HIVEMEM_STORE_URL"])
    return {"index": index, "mixed": mixed}


def _drop(store_url: str) -> None:
    from hivemem.config import Settings
    from search import open_store
    from search.opensearch.setup import recorded_model

    recorded = recorded_model(store_url, Settings())
    if recorded is not None:
        open_store(store_url, embedding_model=recorded[0], dimension=recorded[1]).drop()


def _server_env(max_chunks: int | None, embed_model: str, no_resolution: bool) -> dict[str, str]:
    env = {} if max_chunks is None else {"HIVEMEM_KNOWLEDGE_MAX_CHUNKS": str(max_chunks)}
    env |= {"HIVEMEM_EMBED_MODEL": embed_model} if embed_model else {}
    return env | ({"HIVEMEM_RESOLUTION_NEIGHBOURS": "0"} if no_resolution else {})


def run_http_load(
    *,
    document: Path | None,
    memories: int = 5000,
    clients: int = 16,
    calls: int = 2000,
    upload_clients: int = 8,
    idle_calls: int = 400,
    max_chunks: int | None = None,
    rounds: int = 1,
    opensearch: str | None = None,
    embed_model: str = "",
    no_resolution: bool = False,
) -> dict[str, Any]:
    """Run both measurements on a fresh server; the report (see the module's docstring). The mixed
    load runs ``rounds`` times in a row (the first right after the seed); without ``document`` the
    upload is left out."""
    env = _server_env(max_chunks, embed_model, no_resolution)
    on_cluster = _on_opensearch(opensearch, env, memories, clients, calls, rounds) if opensearch else None
    with tempfile.TemporaryDirectory(prefix="hivemem-http-load-") as folder, _server(Path(folder), env) as (url, proc):
        _seed(url, memories)
        mixed = [_mixed(url, clients, calls) for _ in range(rounds)]
        if document is None:
            report = {"bench": "http-load", "memories": memories, "resolution": not no_resolution, "mixed": mixed}
            return report | ({"opensearch": on_cluster} if on_cluster else {})
        pid = proc.pid
        idle = _recalling(url, upload_clients, lambda calls: calls >= idle_calls)
        release_settle = _rss_mb(pid)
        data = document.read_bytes()
        done = threading.Event()
        peak = [release_settle]
        job: dict[str, Any] = {}

        def upload() -> None:
            try:
                with httpx.Client(base_url=url, timeout=3600) as http:
                    answer = http.put(
                        "/v1/knowledge/documents", params={"name": document.name, "scope": SCOPE}, content=data
                    )
                    answer.raise_for_status()
                    body = answer.json()
                    job.update(_wait_job(http, body["id"]) if answer.status_code == 202 else {"result": body})
            finally:
                done.set()

        def watch_memory() -> None:
            while not done.wait(0.2):
                peak[0] = max(peak[0], _rss_mb(pid))

        watcher = threading.Thread(target=watch_memory, daemon=True)
        uploader = threading.Thread(target=upload, daemon=True)
        began = time.perf_counter()
        watcher.start()
        uploader.start()
        during = _recalling(url, upload_clients, lambda _: done.is_set())
        indexed_s = time.perf_counter() - began
        uploader.join()
        watcher.join()
        after = _rss_mb(pid)
        idle_summary, during_summary = latency_summary(idle), latency_summary(during)
        return {
            "bench": "http-load",
            "memories": memories,
            "mixed": mixed[0] if rounds == 1 else mixed,
            "upload": {
                "document": document.name,
                "bytes": len(data),
                "clients": upload_clients,
                "indexed_s": round(indexed_s, 1),
                "job": {k: job.get(k) for k in ("state", "error", "result") if k in job},
                "recall_idle": idle_summary,
                "recall_during": during_summary,
                "p95_during_over_idle": round(during_summary.get("p95_ms", 0) / idle_summary["p95_ms"], 2),
                "rss_mb": {"before": round(release_settle), "peak": round(peak[0]), "after": round(after)},
                "rss_after_over_before": round(after / release_settle, 2),
            },
        }
