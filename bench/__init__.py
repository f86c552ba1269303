"""hivemem's benchmarks: the suite that drives the real store and recall path (``bench.suite``,
``hivemem bench …``), their data sets, and the results (RESULTS.md). Not part of the product
wheel: run from a clone of the repository."""
