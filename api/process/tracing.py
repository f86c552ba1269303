"""Traces over OTLP/HTTP, off unless ``HIVEMEM_OTEL_ENDPOINT`` names a collector.

One trace follows a request across the processes that serve it: the gateway's HTTP span, the Celery
publish of its job, the worker's run of the task (the trace context travels in the task's message
headers), and inside either process the steps of :mod:`workers.spans` (embedding, store writes) and
the recall stages (:class:`TracingObserver`). Each process names itself ``hivemem-<role>``
(``gateway``, ``worker``, ``mcp``). Spans leave in batches from a background thread, so a request
never waits on the collector; a collector that is down loses spans, never requests.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from opentelemetry import trace

import hivemem
from hivemem.config import Settings
from hivemem.errors import ConfigError
from hivemem.observe import Observer

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["TracingObserver", "start_tracing", "trace_app"]

# Probes, scrapes and the dashboard's files are not worth a trace each.
_UNTRACED_URLS = "healthz,readyz,metrics,ui/static,docs,redoc,openapi.json"


def start_tracing(settings: Settings, role: str) -> bool:
    """Send this process's spans to ``settings.otel_endpoint`` as ``hivemem-<role>``; with Celery in
    use, carry the trace through task messages. False (and nothing done) when no endpoint is set."""
    if not settings.otel_endpoint:
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError(
            "HIVEMEM_OTEL_ENDPOINT is set, but the otel extra is not installed: pip install 'hivemem[otel]'"
        ) from exc
    resource = Resource.create({"service.name": f"hivemem-{role}", "service.version": hivemem.__version__})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{settings.otel_endpoint}/v1/traces")))
    trace.set_tracer_provider(provider)
    if settings.broker_url:
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        CeleryInstrumentor().instrument(tracer_provider=provider)  # type: ignore[no-untyped-call]
    return True


def trace_app(app: FastAPI) -> None:
    """A server span for each HTTP request the app answers (probes and static files left out)."""
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, excluded_urls=_UNTRACED_URLS)


class TracingObserver:
    """An :class:`~hivemem.observe.Observer` that also records each recall stage as a span (a child
    of the request's), then tells ``inner`` (the metrics, or nobody) as before."""

    def __init__(self, inner: Observer) -> None:
        self._inner = inner
        self._tracer = trace.get_tracer("hivemem.recall")

    def recall_stage(self, stage: str, seconds: float) -> None:
        # The stage has just ended: its span is drawn over the time it took.
        end = time.time_ns()
        span = self._tracer.start_span(f"recall.{stage}", start_time=end - int(seconds * 1e9))
        span.end(end_time=end)
        self._inner.recall_stage(stage, seconds)

    def rerank(self, outcome: str) -> None:
        trace.get_current_span().set_attribute("hivemem.rerank", outcome)
        self._inner.rerank(outcome)

    def embed_batch(self, lane: str, size: int) -> None:
        self._inner.embed_batch(lane, size)
