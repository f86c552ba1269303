"""The knowledge aggregate of a store, handed to the object that implements it for that backend.

Both stores keep their knowledge code in a module of its own (``search/sqlite/knowledge.py``,
``search/opensearch/knowledge.py``) and take these methods, which forward every call to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hivemem.fusion import Candidate
from hivemem.knowledge import KnowledgeChunk, KnowledgeSource
from search.base import ChunkFilter, KnowledgeStore, SourceChunks

__all__ = ["DelegatesKnowledge"]


class DelegatesKnowledge:
    """A :class:`search.base.KnowledgeStore` that forwards to ``self._knowledge``."""

    _knowledge: KnowledgeStore

    def replace_source(self, source: KnowledgeSource, chunks: Sequence[KnowledgeChunk]) -> None:
        self._knowledge.replace_source(source, chunks)

    def replace_sources(self, documents: Sequence[SourceChunks]) -> None:
        self._knowledge.replace_sources(documents)

    def record_source_error(self, source: KnowledgeSource) -> None:
        self._knowledge.record_source_error(source)

    def get_source(self, scope: str, uri: str) -> KnowledgeSource | None:
        return self._knowledge.get_source(scope, uri)

    def sources(self, scopes: Sequence[str]) -> list[KnowledgeSource]:
        return self._knowledge.sources(scopes)

    def source_scopes(self) -> list[str]:
        return self._knowledge.source_scopes()

    def delete_source(self, scope: str, uri: str) -> KnowledgeSource:
        return self._knowledge.delete_source(scope, uri)

    def delete_sources(self, scope: str, uris: Sequence[str]) -> list[KnowledgeSource]:
        return self._knowledge.delete_sources(scope, uris)

    def source_chunks(self, scope: str, uri: str) -> list[KnowledgeChunk]:
        return self._knowledge.source_chunks(scope, uri)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[KnowledgeChunk]:
        return self._knowledge.get_chunks(chunk_ids)

    def chunk_keyword_search(self, text: str, where: ChunkFilter, limit: int) -> list[Candidate]:
        return self._knowledge.chunk_keyword_search(text, where, limit)

    def chunk_vector_search(self, vector: Sequence[float], where: ChunkFilter, limit: int) -> list[Candidate]:
        return self._knowledge.chunk_vector_search(vector, where, limit)

    def scan_chunks(self, where: ChunkFilter) -> Iterator[KnowledgeChunk]:
        return self._knowledge.scan_chunks(where)
