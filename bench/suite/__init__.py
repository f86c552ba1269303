"""Benchmarks that drive the real store and recall path (``hivemem bench …``)."""
