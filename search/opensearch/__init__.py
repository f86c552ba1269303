"""The distributed store: OpenSearch indices behind aliases, k-NN and BM25, written in bulk."""

from search.opensearch.store import OpenSearchStore

__all__ = ["OpenSearchStore"]
