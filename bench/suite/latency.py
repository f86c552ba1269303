"""Calls timed from many client threads at once, and their percentiles: what the load benches share."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from bench.suite.metrics import percentile

__all__ = ["latencies", "latency_summary"]


def latencies(call: Callable[[], object], clients: int, until: Callable[[int], bool]) -> list[float]:
    """Latency of each ``call`` from ``clients`` threads, calling until ``until(calls so far)``."""
    found: list[float] = []

    def client() -> None:
        while not until(len(found)):
            began = time.perf_counter()
            call()
            found.append(time.perf_counter() - began)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    return found


def latency_summary(values: list[float]) -> dict[str, float]:
    """How many calls, and their p50, p95 and p99 in milliseconds."""
    if not values:
        return {"calls": 0}
    return {
        "calls": len(values),
        "p50_ms": round(percentile(values, 0.5) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "p99_ms": round(percentile(values, 0.99) * 1000, 1),
    }
