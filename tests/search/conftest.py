"""Fixtures of the search tests: the OpenSearch backend (osmem-server or a real cluster) and the spec validator."""

from __future__ import annotations

from tests.opensearch_backend import opensearch_backend, spec_validator

__all__ = ["opensearch_backend", "spec_validator"]  # fixtures, re-exported for pytest
