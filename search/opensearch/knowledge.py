"""The OpenSearch store's knowledge aggregate: a sources index and a chunks index (BM25 + k-NN).

OpenSearch has no transactions, so a document is replaced in an order that readers cannot see
half-done: the new chunks are written first, then the source record is switched to the new content
hash, then the old chunks are deleted. Every read keeps only the chunks whose content hash is the
one their source names now (read by realtime ``mget``, which needs no refresh), so a search in
between sees the old version or the new one, never a mix; a crash in between leaves chunks no read
returns, and the next write of that document deletes them. A batch of documents (a bulk ingest's)
is written so, all at once: its chunks in ``_bulk`` requests, its sources in one, its old chunks
deleted by one query, then one refresh of both indices, so that what was written is searched and
listed when the call returns. Not a refresh per request: on a cluster each forced refresh writes a
segment of its own, and a bulk ingest sent three a document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from hivemem.errors import EmbeddingMismatchError, SourceNotFoundError
from hivemem.fusion import Candidate
from hivemem.knowledge import DocumentFormat, KnowledgeChunk, KnowledgeSource
from search.base import ChunkFilter, SourceChunks
from search.opensearch import bodies, knowledge_bodies
from search.opensearch.bodies import IndexNames, IndexOptions
from search.opensearch.cluster import Cluster
from search.opensearch.docs import from_iso, to_iso

__all__ = ["KnowledgeIndices", "chunk_from_doc"]

Json = dict[str, Any]

# Sources per request of a batch delete: an ``_mget`` of ids and a ``terms`` query of uris, each well
# inside the cluster's default limits (65,536 terms; a few hundred kilobytes of request).
_URIS_PER_REQUEST = 1000
# Chunk documents per ``_bulk`` (each carries its vector: some kilobytes), and documents whose old
# chunks one ``_delete_by_query`` removes (three clauses each, under the default 1,024 a query).
_CHUNKS_PER_BULK = 500
_DOCUMENTS_PER_DELETE = 200


def _source_doc(source: KnowledgeSource) -> Json:
    return {
        "scope": source.scope,
        "uri": source.uri,
        "title": source.title,
        "format": source.format.value,
        "content_hash": source.content_hash,
        "size": source.size,
        "fetched_at": to_iso(source.fetched_at),
        "indexed_at": None if source.indexed_at is None else to_iso(source.indexed_at),
        "chunk_count": source.chunk_count,
        "last_error": source.last_error,
    }


def _source_from_doc(doc: Json) -> KnowledgeSource:
    return KnowledgeSource(
        scope=doc["scope"],
        uri=doc["uri"],
        title=doc["title"],
        format=DocumentFormat(doc["format"]),
        content_hash=doc["content_hash"],
        size=int(doc["size"]),
        fetched_at=from_iso(doc["fetched_at"]),
        indexed_at=None if doc.get("indexed_at") is None else from_iso(doc["indexed_at"]),
        chunk_count=int(doc["chunk_count"]),
        last_error=doc.get("last_error"),
    )


def chunk_from_doc(doc: Json, *, with_embedding: bool) -> KnowledgeChunk:
    """The chunk a document holds (its vector only ``with_embedding``)."""
    vector = doc.get(bodies.VECTOR_FIELD) if with_embedding else None
    return KnowledgeChunk(
        id=doc["id"],
        scope=doc["scope"],
        uri=doc["uri"],
        ordinal=int(doc["ordinal"]),
        text=doc["text"],
        title=doc["title"],
        section=tuple(doc.get("section") or ()),
        page=doc.get("page"),
        start=int(doc["start"]),
        end=int(doc["end"]),
        embedding=None if vector is None else tuple(float(x) for x in vector),
    )


class KnowledgeIndices:
    """Knowledge reads and writes over one store's cluster connection."""

    def __init__(self, cluster: Cluster, names: IndexNames, options: IndexOptions, dimension: int) -> None:
        self._cluster = cluster
        self._names = names
        self._options = options
        self._dimension = dimension

    # -- writes --------------------------------------------------------------------------------

    def _chunk_doc(self, chunk: KnowledgeChunk, content_hash: str) -> Json:
        doc: Json = {
            "id": chunk.id,
            "scope": chunk.scope,
            "uri": chunk.uri,
            "content_hash": content_hash,
            "ordinal": chunk.ordinal,
            "text": chunk.text,
            "title": chunk.title,
            "section": list(chunk.section),
            "page": chunk.page,
            "start": chunk.start,
            "end": chunk.end,
        }
        if chunk.embedding is not None:
            if len(chunk.embedding) != self._dimension:
                raise EmbeddingMismatchError(
                    f"chunk {chunk.id} has a {len(chunk.embedding)}-dimension vector, the store expects "
                    f"{self._dimension}"
                )
            doc[bodies.VECTOR_FIELD] = list(chunk.embedding)
        return doc

    def _delete_replaced(self, sources: list[KnowledgeSource]) -> None:
        """Delete the chunks of each source's other versions, without a refresh (the caller's comes)."""
        client = self._cluster.client
        for start in range(0, len(sources), _DOCUMENTS_PER_DELETE):
            versions = [
                {
                    "bool": {
                        "filter": [{"term": {"scope": s.scope}}, {"term": {"uri": s.uri}}],
                        "must_not": [{"term": {"content_hash": s.content_hash}}],
                    }
                }
                for s in sources[start : start + _DOCUMENTS_PER_DELETE]
            ]
            query = {"bool": {"should": versions, "minimum_should_match": 1}}
            delete = partial(
                client.delete_by_query,
                index=self._names.chunks,
                body={"query": query},
                refresh=False,
                conflicts="proceed",
            )
            self._cluster.call("deleting replaced chunks", delete)

    def _put_source(self, source: KnowledgeSource) -> None:
        client = self._cluster.client
        sid = knowledge_bodies.source_id(source.scope, source.uri)
        self._cluster.call(
            "writing a source",
            lambda: client.index(index=self._names.sources, id=sid, body=_source_doc(source), refresh=True),
        )

    def replace_source(self, source: KnowledgeSource, chunks: Sequence[KnowledgeChunk]) -> None:
        self.replace_sources([(source, chunks)])

    def replace_sources(self, documents: Sequence[SourceChunks]) -> None:
        latest = {(source.scope, source.uri): (source, chunks) for source, chunks in documents}
        if not latest:
            return
        docs = [  # checks every vector before anything is written
            self._chunk_doc(chunk, source.content_hash) for source, chunks in latest.values() for chunk in chunks
        ]
        for start in range(0, len(docs), _CHUNKS_PER_BULK):
            lines: list[Json] = []
            for doc in docs[start : start + _CHUNKS_PER_BULK]:
                lines += [{"index": {"_index": self._names.chunks, "_id": doc["id"]}}, doc]
            self._cluster.bulk(lines, refresh="false")
        sources = [source for source, _ in latest.values()]
        lines = []
        for source in sources:
            sid = knowledge_bodies.source_id(source.scope, source.uri)
            lines += [{"index": {"_index": self._names.sources, "_id": sid}}, _source_doc(source)]
        self._cluster.bulk(lines, refresh="false")
        self._delete_replaced(sources)
        client = self._cluster.client
        indices = f"{self._names.chunks},{self._names.sources}"
        self._cluster.call("refreshing the knowledge indices", lambda: client.indices.refresh(index=indices))

    def record_source_error(self, source: KnowledgeSource) -> None:
        held = self.get_source(source.scope, source.uri)
        if held is None:
            self._put_source(source)
            return
        client = self._cluster.client
        sid = knowledge_bodies.source_id(source.scope, source.uri)
        patch = {"doc": {"last_error": source.last_error, "fetched_at": to_iso(source.fetched_at)}}
        self._cluster.call(
            "recording a source error",
            lambda: client.update(index=self._names.sources, id=sid, body=patch, refresh=True),
        )

    def delete_source(self, scope: str, uri: str) -> KnowledgeSource:
        removed = self._delete_some(scope, [uri])
        if not removed:
            raise SourceNotFoundError(f"no indexed document {uri!r} in scope {scope!r}")
        return removed[0]

    def delete_sources(self, scope: str, uris: Sequence[str]) -> list[KnowledgeSource]:
        wanted = list(dict.fromkeys(uris))
        removed: list[KnowledgeSource] = []
        for start in range(0, len(wanted), _URIS_PER_REQUEST):
            removed += self._delete_some(scope, wanted[start : start + _URIS_PER_REQUEST])
        return removed

    def _delete_some(self, scope: str, uris: list[str]) -> list[KnowledgeSource]:
        """Three requests: read the sources, delete them (one ``_bulk``), delete their chunks (one
        ``_delete_by_query``). Sources first: a read skips chunks whose source is gone, so a crash in
        between leaves nothing visible."""
        client = self._cluster.client
        ids = [knowledge_bodies.source_id(scope, uri) for uri in uris]
        response = self._cluster.call(
            "reading sources", lambda: client.mget(index=self._names.sources, body={"ids": ids})
        )
        held = [_source_from_doc(doc["_source"]) for doc in response["docs"] if doc.get("found")]
        if not held:
            return []
        self._cluster.bulk(
            [
                {"delete": {"_index": self._names.sources, "_id": knowledge_bodies.source_id(scope, s.uri)}}
                for s in held
            ],
            refresh="true",
        )
        query = {"bool": {"filter": [{"term": {"scope": scope}}, {"terms": {"uri": [s.uri for s in held]}}]}}
        self._cluster.call(
            "deleting chunks",
            lambda: client.delete_by_query(
                index=self._names.chunks, body={"query": query}, refresh=True, conflicts="proceed"
            ),
        )
        return held

    # -- reads ---------------------------------------------------------------------------------

    def get_source(self, scope: str, uri: str) -> KnowledgeSource | None:
        held = self._cluster.get_doc(self._names.sources, knowledge_bodies.source_id(scope, uri))
        if held is None or not held.get("found", False):
            return None
        return _source_from_doc(held["_source"])

    def sources(self, scopes: Sequence[str]) -> list[KnowledgeSource]:
        if not scopes:
            return []
        query = {"terms": {"scope": list(scopes)}}
        docs = self._cluster.scan(self._names.sources, query, [{"scope": "asc"}, {"uri": "asc"}])
        return [_source_from_doc(doc) for doc in docs]

    def source_scopes(self) -> list[str]:
        # One document per source: a scan is small next to the chunks it describes.
        docs = self._cluster.scan(self._names.sources, {"match_all": {}}, [{"scope": "asc"}, {"uri": "asc"}])
        return sorted({str(doc["scope"]) for doc in docs})

    def _current_hashes(self, pairs: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The content hash each (scope, uri) source names now (one ``mget``)."""
        if not pairs:
            return {}
        client = self._cluster.client
        ids = [knowledge_bodies.source_id(scope, uri) for scope, uri in pairs]
        response = self._cluster.call(
            "reading sources",
            lambda: client.mget(index=self._names.sources, body={"ids": ids}, _source=["scope", "uri", "content_hash"]),
        )
        return {
            (doc["_source"]["scope"], doc["_source"]["uri"]): doc["_source"]["content_hash"]
            for doc in response["docs"]
            if doc.get("found")
        }

    def _current(self, items: list[Json], chunk_of: Callable[[Json], Json] = lambda item: item) -> list[Json]:
        """The items whose chunk (``chunk_of(item)``: a search hit's ``_source``) belongs to the version
        its source names now."""

        def version(item: Json) -> tuple[tuple[str, str], str]:
            chunk = chunk_of(item)
            return (chunk["scope"], chunk["uri"]), chunk["content_hash"]

        hashes = self._current_hashes({version(item)[0] for item in items})
        return [item for item in items if hashes.get(version(item)[0]) == version(item)[1]]

    def source_chunks(self, scope: str, uri: str) -> list[KnowledgeChunk]:
        query = {"bool": {"filter": [{"term": {"scope": scope}}, {"term": {"uri": uri}}]}}
        docs = self._current(list(self._cluster.scan(self._names.chunks, query, [{"ordinal": "asc"}, {"id": "asc"}])))
        return [chunk_from_doc(doc, with_embedding=True) for doc in docs]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[KnowledgeChunk]:
        if not chunk_ids:
            return []
        client = self._cluster.client
        response = self._cluster.call(
            "reading chunks",
            lambda: client.mget(
                index=self._names.chunks, body={"ids": list(chunk_ids)}, _source_excludes=[bodies.VECTOR_FIELD]
            ),
        )
        docs = self._current([doc["_source"] for doc in response["docs"] if doc.get("found")])
        by_id = {doc["id"]: chunk_from_doc(doc, with_embedding=False) for doc in docs}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def scan_chunks(self, where: ChunkFilter) -> Iterator[KnowledgeChunk]:
        query = {"bool": {"filter": knowledge_bodies.chunk_filter(where)}}
        sort = [{"scope": "asc"}, {"uri": "asc"}, {"ordinal": "asc"}, {"id": "asc"}]
        page: list[Json] = []
        for doc in self._cluster.scan(self._names.chunks, query, sort):
            doc.pop(bodies.VECTOR_FIELD, None)
            page.append(doc)
            if len(page) == 500:
                yield from (chunk_from_doc(d, with_embedding=False) for d in self._current(page))
                page = []
        yield from (chunk_from_doc(d, with_embedding=False) for d in self._current(page))

    def _search(self, body: Json) -> list[Json]:
        client = self._cluster.client
        response = self._cluster.call("searching chunks", lambda: client.search(index=self._names.chunks, body=body))
        return self._current(response["hits"]["hits"], lambda hit: hit["_source"])

    def chunk_keyword_search(self, text: str, where: ChunkFilter, limit: int) -> list[Candidate]:
        words = bodies.query_words(text)
        if words is None or limit < 1:
            return []
        hits = self._search(knowledge_bodies.match_chunks(words[0], words[1], where, limit))
        return [Candidate(hit["_id"], float(hit["_score"])) for hit in hits]

    def chunk_vector_search(self, vector: Sequence[float], where: ChunkFilter, limit: int) -> list[Candidate]:
        if len(vector) != self._dimension:
            raise EmbeddingMismatchError(
                f"query vector has {len(vector)} dimensions, the store expects {self._dimension}"
            )
        if limit < 1:
            return []
        hits = self._search(knowledge_bodies.knn_chunks(vector, where, limit, self._options))
        space = self._options.space_type
        found = [Candidate(h["_id"], bodies.score_to_cosine(float(h["_score"]), space)) for h in hits]
        return sorted(found, key=lambda c: (-c.score, c.id))
