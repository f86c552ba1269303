"""Spans of the steps the workers take (embedding, store writes), so that a trace of one request
shows where its time went, in the gateway's process or a worker's.

They are made with the OpenTelemetry API alone: until a process turns tracing on
(``HIVEMEM_OTEL_ENDPOINT``, :mod:`api.process.tracing`), its tracer is the API's no-op one and a span costs
a few hundred nanoseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace

__all__ = ["flush_spans", "step"]

_tracer = trace.get_tracer("hivemem.workers")


@contextmanager
def step(name: str, **attributes: str | int | float | bool) -> Iterator[None]:
    """A span named ``name`` (``embed``, ``store.write``, …) around the block, with ``attributes``."""
    with _tracer.start_as_current_span(name, attributes=attributes):
        yield


def flush_spans(timeout_ms: int = 5_000) -> None:
    """Send the spans still waiting in this process's batch (a pool process about to exit)."""
    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        flush(timeout_ms)
