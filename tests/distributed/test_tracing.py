"""Traces across the distributed shape: a real gateway and a real Celery worker send their spans
over OTLP/HTTP to a collector (a small OTLP receiver in the test, decoding the protobuf the SDK
sends), and one request's spans share one trace from the gateway to the worker's store write."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.e2e.helpers import HivememServer
from tests.services import CeleryWorker

trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2", reason="the otel extra is not installed"
)

SCOPE = "github.com/acme/api"


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    parent: str
    span_id: str


class Collector:
    """An OTLP/HTTP trace receiver on a free port: it keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        collector = self

        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = trace_service.ExportTraceServiceRequest.FromString(body)
                collector.add(request)
                answer = trace_service.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: object) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def add(self, request: object) -> None:
        found = []
        for resource_spans in request.resource_spans:  # type: ignore[attr-defined]
            names = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        Span(
                            names.get("service.name", ""),
                            span.name,
                            span.trace_id.hex(),
                            span.parent_span_id.hex(),
                            span.span_id.hex(),
                        )
                    )
        with self._lock:
            self.spans.extend(found)

    def wait_for(self, check: Callable[[list[Span]], bool], timeout_s: float = 60) -> list[Span]:
        """The spans once ``check(spans)`` holds (polled: spans arrive in batches)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                spans = list(self.spans)
            if check(spans):  # type: ignore[operator]
                return spans
            assert time.monotonic() < deadline, (
                f"the spans never showed it: {sorted({(s.service, s.name) for s in spans})}"
            )
            time.sleep(0.1)

    def __enter__(self) -> Collector:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    with Collector() as running:
        yield running


def one_trace(spans: list[Span], root: str) -> list[Span]:
    """Every span of the trace whose gateway span is named ``root`` (the newest such trace)."""
    roots = [s for s in spans if s.service == "hivemem-gateway" and s.name == root]
    if not roots:
        return []
    return [s for s in spans if s.trace_id == roots[-1].trace_id]


def _ancestry(trace: list[Span], span: Span) -> list[Span] | None:
    """``span`` and its parents up to the trace's root, root first; None while a parent is missing."""
    by_id = {s.span_id: s for s in trace}
    line = [span]
    while line[-1].parent:
        parent = by_id.get(line[-1].parent)
        if parent is None:
            return None
        line.append(parent)
    return line[::-1]


def test_a_request_is_one_trace_from_the_gateway_to_the_workers_store_write(
    redis_url: str, dirs: tuple[Path, Path], collector: Collector
) -> None:
    data_dir, logs = dirs
    # Batches leave every 100 ms, not every 5 s, so the test waits less.
    env = {"HIVEMEM_OTEL_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="30", **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    worker.start(concurrency=1)
    gateway.start()
    try:
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            note = {"title": "Release trains", "content": "Releases leave every other Tuesday.", "scope": SCOPE}
            stored = http.post("/v1/memories", json=note)
            assert stored.status_code == 201, stored.text
            found = http.post("/v1/remember", json={"query": "when do releases leave", "scope": SCOPE})
            assert found.status_code == 200 and found.json()["results"], found.text

        def memorized(spans: list[Span]) -> bool:
            # Every span from the store write up to the gateway's request: a parent ends after its
            # children, so it may come in a later batch than they do.
            trace = one_trace(spans, "POST /v1/memories")
            writes = [s for s in trace if (s.service, s.name) == ("hivemem-worker", "store.write")]
            embeds = [s for s in trace if (s.service, s.name) == ("hivemem-worker", "embed")]
            return bool(writes and embeds) and _ancestry(trace, writes[0]) is not None

        spans = collector.wait_for(memorized)
        memorize = one_trace(spans, "POST /v1/memories")
        write = next(s for s in memorize if (s.service, s.name) == ("hivemem-worker", "store.write"))
        chain = _ancestry(memorize, write)
        assert chain is not None
        # Gateway request → publish → the worker's embed run → its publish of the resolve → the
        # resolve run → the store write: one unbroken line of parents across both processes.
        steps = [
            (s.service, s.name.split("/")[0] if s.name.startswith(("run/", "apply_async/")) else s.name) for s in chain
        ]
        assert steps == [
            ("hivemem-gateway", "POST /v1/memories"),
            ("hivemem-gateway", "apply_async"),
            ("hivemem-worker", "run"),
            ("hivemem-worker", "apply_async"),
            ("hivemem-worker", "run"),
            ("hivemem-worker", "store.write"),
        ], steps

        def recalled(spans: list[Span]) -> bool:
            names = {s.name for s in one_trace(spans, "POST /v1/remember")}
            return {"recall.legs", "recall.fetch", "recall.score"} <= names

        collector.wait_for(recalled)
    finally:
        gateway.stop()
        worker.stop()
