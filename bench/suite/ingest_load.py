"""``hivemem bench ingest-load``: recall latency while Celery workers ingest a folder of documents.

A private Redis, N real ``hivemem worker`` processes and the gateway service in this process (as
behind HTTP), on one SQLite store. The store is seeded with memories; ``clients`` threads recall
for a while with the workers idle, then again while one ingest job (one task per document on the
``ingest`` queue) runs on the workers. The report compares the two p95s, and says how fast the
workers ingested.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from bench.suite.latency import latencies, latency_summary
from bench.suite.throughput import shape_service
from hivemem.config import Settings
from hivemem.knowledge_schemas import IngestRequest
from hivemem.model import MemoryType
from hivemem.schemas import MemoryCreate, RecallRequest
from workers.documents.sources import FileAccess

__all__ = ["run_ingest_load"]

SCOPE = "bench/ingest-load"
_TOPICS = ["backups", "deploys", "queues", "caching", "logging", "alerts", "billing", "search", "auth", "mail"]


def run_ingest_load(
    settings: Settings,
    *,
    corpus: Path,
    workers: int = 2,
    clients: int = 8,
    idle_queries: int = 400,
    nice: int = 0,
) -> dict[str, Any]:
    """Measure recall idle and during an ingest of ``corpus`` on ``workers`` workers."""
    with (
        tempfile.TemporaryDirectory(prefix="hivemem-bench-ingest-") as folder,
        shape_service(settings, "celery", workers, Path(folder), nice=nice) as service,
    ):
        service.parts.warm_up()
        caller = Caller(principal="bench", default_scope=SCOPE)
        seeds = [
            MemoryCreate(
                title=f"{_TOPICS[i % 10].title()} note {i}",
                content=f"For {_TOPICS[i % 10]}, rule {i}: check the dashboard before changing setting {i}.",
                scope=SCOPE,
                memory_type=MemoryType.DECISION,
            )
            for i in range(300)
        ]
        service.memorize_bulk(seeds, caller)
        queries = [f"what do we do about {topic} settings" for topic in _TOPICS]

        def recall() -> object:
            query = queries[int(time.perf_counter() * 1000) % len(queries)]
            return service.remember(RecallRequest(query=query, scope=SCOPE), caller)

        print("ingest-load: recall, workers idle", file=sys.stderr)
        idle = latencies(recall, clients, lambda n: n >= idle_queries)
        print(f"ingest-load: ingesting {corpus} on {workers} workers, recalling meanwhile", file=sys.stderr)
        began = time.perf_counter()
        job = service.knowledge.ingest_job(IngestRequest(paths=[str(corpus)], scope=SCOPE), caller, FileAccess())
        board = service.runner.board
        during = latencies(recall, clients, lambda n: board.get(job.id).state.final)
        while not board.get(job.id).state.final:
            time.sleep(0.1)
        wall = time.perf_counter() - began
        done = board.get(job.id)
    result = done.result or {}
    idle_s, during_s = latency_summary(idle), latency_summary(during)
    return {
        "bench": "ingest-load",
        "workers": workers,
        "worker_nice": nice,
        "clients": clients,
        "documents": done.total,
        "job_state": done.state.value,
        "indexed": result.get("indexed"),
        "failed": result.get("failed"),
        "chunks": result.get("chunks"),
        "ingest_s": round(wall, 1),
        "docs_per_s": round(done.total / wall, 2),
        "recall_idle": idle_s,
        "recall_during_ingest": during_s,
        "p95_ratio_during_to_idle": round(during_s["p95_ms"] / idle_s["p95_ms"], 2),
    }
