"""``/metrics``: the server's Prometheus series, in the text format.

Counted as they happen: HTTP requests by route template, method and status, with latency
histograms; MCP tool calls by tool and outcome, with latencies; recall stage times; what the rerank
stage did; embedder batch sizes by lane. Read at each scrape: memories in the store, jobs waiting by
queue, the newest jobs by state, and the process's own (CPU, memory, file descriptors). Each app has a registry of its
own, so that two servers in one process (tests) do not mix their series. Nothing is sent anywhere:
a scraper pulls ``/metrics``, with a token like any request where tokens are needed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from api.http.guard import ASGIApp, Message, Receive, Scope, Send
from api.services.memories import MemoryService
from hivemem.errors import HivememError
from hivemem.jobs import JobState

__all__ = ["CONTENT_TYPE", "Metrics", "MetricsMiddleware"]

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
UNROUTED = "(unrouted)"
# Jobs by state are counted over the newest this many: a scrape reads each one.
_JOBS_TALLIED = 1000


class Metrics:
    """The series of one server, and the :class:`hivemem.observe.Observer` the core reports to."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.requests = Counter(
            "hivemem_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "hivemem_http_request_seconds",
            "Time to answer an HTTP request, by route template and method.",
            ["route", "method"],
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "hivemem_mcp_tool_calls",
            "MCP tool calls, by tool and outcome (ok or error).",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "hivemem_mcp_tool_seconds", "Time an MCP tool call took, by tool.", ["tool"], buckets=_SECONDS,
            registry=self.registry,
        )  # fmt: skip
        self.recall_stages = Histogram(
            "hivemem_recall_stage_seconds",
            "Time of each recall stage: admission (waiting for a search slot), legs (query embedding, BM25 and vector "
            "search, fusion), fetch, rerank, score.",
            ["stage"],
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.reranks = Counter(
            "hivemem_rerank", "What the rerank stage did per recall (applied, gated, late, unavailable, off).",
            ["outcome"], registry=self.registry,
        )  # fmt: skip
        self.embed_batches = Histogram(
            "hivemem_embed_batch_size", "Texts per embedder batch, by lane (queries, passages, documents).",
            ["lane"], buckets=_BATCH_SIZES, registry=self.registry,
        )  # fmt: skip

    # -- the core's Observer ------------------------------------------------------------------

    def recall_stage(self, stage: str, seconds: float) -> None:
        self.recall_stages.labels(stage).observe(seconds)

    def rerank(self, outcome: str) -> None:
        self.reranks.labels(outcome).inc()

    def embed_batch(self, lane: str, size: int) -> None:
        self.embed_batches.labels(lane).observe(size)

    # -- MCP ----------------------------------------------------------------------------------

    def tool_call(self, tool: str, seconds: float, failed: bool) -> None:
        """One MCP tool call (see :data:`api.mcp.host.ToolCalls`)."""
        self.tool_calls.labels(tool, "error" if failed else "ok").inc()
        self.tool_seconds.labels(tool).observe(seconds)

    # -- wiring -------------------------------------------------------------------------------

    def watch(self, service: MemoryService) -> None:
        """Report the service's recalls and embedder batches, and read its store and queues at each scrape."""
        service.recaller.observer = self
        embedder = service.embedder
        if hasattr(embedder, "observer"):
            embedder.observer = self
        self.registry.register(_ServiceCollector(service))

    def render(self) -> bytes:
        """Every series, in the Prometheus text format."""
        return generate_latest(self.registry)


class _ServiceCollector(Collector):
    """What is read from the service at each scrape; a part that cannot be read is left out."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service

    def collect(self) -> Iterator[Metric]:
        service = self._service
        try:
            yield GaugeMetricFamily(
                "hivemem_memories", "Memories in the store, every scope and state.", service.store.count()
            )
        except HivememError as exc:
            log.warning("metrics: cannot count the memories: %s", exc)
        leg = service.second_leg
        if leg is not None:
            yield CounterMetricFamily(
                "hivemem_second_leg_vectors", "Second-model vectors this server has made.", value=leg.made
            )
            yield GaugeMetricFamily(
                "hivemem_second_leg_caught_up",
                "1 when the filler's last look found every memory with a second-model vector, 0 while it works.",
                value=int(leg.caught_up),
            )
        try:
            depth = service.runner.queue_depth()
        except HivememError as exc:
            log.warning("metrics: cannot read the queues: %s", exc)
        else:
            waiting = GaugeMetricFamily("hivemem_queue_depth", "Jobs waiting, by queue.", labels=["queue"])
            for queue, count in sorted(depth.items()):
                waiting.add_metric([queue], count)
            yield waiting
        try:
            recent = service.runner.board.recent(_JOBS_TALLIED)
        except HivememError as exc:
            log.warning("metrics: cannot read the jobs: %s", exc)
        else:
            by_state = GaugeMetricFamily(
                "hivemem_jobs", f"The newest {_JOBS_TALLIED} jobs, by state.", labels=["state"]
            )
            for state in JobState:
                by_state.add_metric([state.value], sum(job.state is state for job in recent))
            yield by_state

    def describe(self) -> Iterator[Metric]:
        return iter(())  # read at scrape time only: registering must not call the store


class MetricsMiddleware:
    """ASGI middleware counting every HTTP request by the route template that answered it; one
    refused before routing (a foreign host, a missing token, an unknown path) counts as ``(unrouted)``."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method", ""))
        status = 500
        began = time.perf_counter()

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            # The router leaves the route it picked in the scope.
            route = str(getattr(scope.get("route"), "path", UNROUTED))
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.request_seconds.labels(route, method).observe(time.perf_counter() - began)
