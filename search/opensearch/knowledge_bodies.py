"""Request bodies of the OpenSearch knowledge indices: sources, chunks (BM25 + HNSW), their queries.

Kept apart from :mod:`search.opensearch.bodies` (memories) but built on its analyzers, index
settings and k-NN options, so chunk text is analysed and scored as memory text is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from search.base import ChunkFilter
from search.opensearch.bodies import (
    VECTOR_FIELD,
    IndexNames,
    IndexOptions,
    index_settings,
    index_template,
    knn_query,
    searchable_index_settings,
    text_field,
    text_query,
    vector_mapping,
)

__all__ = ["chunk_filter", "chunks_template", "knn_chunks", "match_chunks", "source_id", "sources_template"]

Json = dict[str, Any]

_CHUNK_TEXT_FIELDS = ["text", "title", "section.text"]


def source_id(scope: str, uri: str) -> str:
    """The document id of a (scope, uri) source: fixed length, whatever the uri holds."""
    return hashlib.sha256(f"{scope}\x00{uri}".encode()).hexdigest()


def sources_template(names: IndexNames, options: IndexOptions) -> Json:
    """The index template of knowledge sources (one document per scope and uri)."""
    keyword = {"type": "keyword"}
    properties = {
        "scope": keyword,
        "uri": keyword,
        "title": {"type": "keyword", "ignore_above": 1024},
        "format": keyword,
        "content_hash": keyword,
        "size": {"type": "long"},
        "fetched_at": {"type": "date_nanos"},
        "indexed_at": {"type": "date_nanos"},
        "chunk_count": {"type": "integer"},
        "last_error": {"type": "keyword", "index": False},
    }
    return index_template(
        names, names.sources, index_settings(options, knn=False), {"dynamic": "strict", "properties": properties}
    )


def chunks_template(names: IndexNames, options: IndexOptions, *, dimension: int) -> Json:
    """The index template of chunks: text for BM25 (text, section path, document title), an HNSW vector.

    ``content_hash`` is the document version a chunk belongs to: readers keep only the chunks of
    the version their source names, so a replaced document never shows a mix of old and new.
    """
    keyword = {"type": "keyword"}
    properties = {
        "id": keyword,
        "scope": keyword,
        "uri": keyword,
        "content_hash": keyword,
        "ordinal": {"type": "integer"},
        "text": text_field(),
        "title": text_field(),
        "section": {"type": "keyword", "fields": {"text": text_field()}},
        "page": {"type": "integer"},
        "start": {"type": "integer"},
        "end": {"type": "integer"},
        VECTOR_FIELD: vector_mapping(options, dimension),
    }
    mappings = {"dynamic": "strict", "properties": properties}
    return index_template(names, names.chunks, searchable_index_settings(options), mappings)


def chunk_filter(where: ChunkFilter) -> list[Json]:
    """Filter clauses of ``where``, inside the engine query."""
    clauses: list[Json] = [{"terms": {"scope": list(where.scopes)}}]
    if where.uri is not None:
        clauses.append({"term": {"uri": where.uri}})
    return clauses


def match_chunks(words: str, stopwords_only: bool, where: ChunkFilter, limit: int) -> Json:
    """The BM25 leg over chunks, ties broken by id."""
    text = text_query(words, stopwords_only, _CHUNK_TEXT_FIELDS)
    return {
        "size": limit,
        "_source": ["uri", "scope", "content_hash"],
        "track_total_hits": False,
        "query": {"bool": {"must": [text], "filter": chunk_filter(where)}},
        "sort": ["_score", {"id": "asc"}],
    }


def knn_chunks(vector: Sequence[float], where: ChunkFilter, limit: int, options: IndexOptions) -> Json:
    """The k-NN leg over chunks, the filter inside the graph search."""
    return {
        "size": limit,
        "_source": ["uri", "scope", "content_hash"],
        "track_total_hits": False,
        "query": knn_query(vector, chunk_filter(where), limit, options),
    }
