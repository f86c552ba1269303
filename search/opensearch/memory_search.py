"""Searches of the OpenSearch store's memories index: the keyword and k-NN legs, both legs of many
queries in one ``_msearch``, and the engine-fused hybrid query. Fusion is the core's
(:mod:`hivemem.fusion`) except in the native hybrid query, whose pipeline repeats its arithmetic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hivemem.errors import EmbeddingMismatchError, StoreError
from hivemem.fusion import Candidate
from hivemem.model import FusionMethod
from search.base import SearchFilter
from search.capabilities import LegQuery, Legs
from search.opensearch import bodies
from search.opensearch.bodies import IndexNames, IndexOptions, Json
from search.opensearch.cluster import Cluster

__all__ = ["MemorySearch"]


class MemorySearch:
    """The memory searches of one store, for query vectors of ``dimension``."""

    def __init__(self, cluster: Cluster, names: IndexNames, options: IndexOptions, dimension: int) -> None:
        self._cluster = cluster
        self._names = names
        self._options = options
        self._dimension = dimension

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self._dimension:
            raise EmbeddingMismatchError(
                f"query vector has {len(vector)} dimensions, the store expects {self._dimension}"
            )

    def _keyword_body(self, text: str, where: SearchFilter, limit: int) -> Json | None:
        words = bodies.query_words(text)
        if words is None or limit < 1:
            return None
        return bodies.keyword_search(words[0], words[1], where, limit)

    def _knn_body(self, vector: Sequence[float], where: SearchFilter, limit: int) -> Json | None:
        self._check_vector(vector)
        return None if limit < 1 else bodies.knn_search(vector, where, limit, self._options)

    def _keyword_hits(self, response: Json) -> list[Candidate]:
        return [Candidate(hit["_id"], float(hit["_score"])) for hit in response["hits"]["hits"]]

    def _knn_hits(self, response: Json) -> list[Candidate]:
        space = self._options.space_type
        found = [
            Candidate(h["_id"], bodies.score_to_cosine(float(h["_score"]), space)) for h in response["hits"]["hits"]
        ]
        return sorted(found, key=lambda c: (-c.score, c.id))

    def _search(self, body: Json, **params: Any) -> Json:
        index = self._names.memories
        return dict(
            self._cluster.call(
                "searching memories", lambda: self._cluster.client.search(index=index, body=body, **params)
            )
        )

    def keyword_search(self, text: str, where: SearchFilter, limit: int) -> list[Candidate]:
        body = self._keyword_body(text, where, limit)
        return [] if body is None else self._keyword_hits(self._search(body))

    def vector_search(self, vector: Sequence[float], where: SearchFilter, limit: int) -> list[Candidate]:
        body = self._knn_body(vector, where, limit)
        return [] if body is None else self._knn_hits(self._search(body))

    def msearch(self, searches: list[Json], kinds: Sequence[str]) -> list[Json]:
        """Every search of ``searches`` on the memories index in one ``_msearch``, answers in order.

        Raises ``StoreError`` for the first that failed, naming its kind from ``kinds``.
        """
        lines = bodies.msearch_lines(self._names.memories, searches)
        response = self._cluster.call("searching memories (msearch)", lambda: self._cluster.client.msearch(body=lines))
        answers: list[Json] = response["responses"]
        for kind, item in zip(kinds, answers, strict=True):
            if "error" in item:
                error = item["error"]
                reason = error.get("reason") if isinstance(error, dict) else error
                raise StoreError(f"OpenSearch {kind} search failed ({item.get('status')}): {reason}")
        return answers

    def search_legs(self, queries: Sequence[LegQuery], where: SearchFilter, limit: int) -> list[Legs]:
        """Both legs of every query in one ``_msearch`` round trip; see :class:`search.capabilities.LegQuery`."""
        plan: list[tuple[int, str]] = []
        searches: list[Json] = []
        for i, query in enumerate(queries):
            if query.text is not None and (body := self._keyword_body(query.text, where, limit)) is not None:
                plan.append((i, "keyword"))
                searches.append(body)
            if query.vector is not None and (body := self._knn_body(query.vector, where, limit)) is not None:
                plan.append((i, "vector"))
                searches.append(body)
        legs = [
            Legs(keyword=[] if q.text is not None else None, vector=[] if q.vector is not None else None)
            for q in queries
        ]
        if not searches:
            return legs
        for (i, leg), item in zip(plan, self.msearch(searches, [leg for _, leg in plan]), strict=True):
            if leg == "keyword":
                legs[i] = replace(legs[i], keyword=self._keyword_hits(item))
            else:
                legs[i] = replace(legs[i], vector=self._knn_hits(item))
        return legs

    def native_hybrid(
        self, text: str, vector: Sequence[float], where: SearchFilter, limit: int, *, fusion: FusionMethod
    ) -> list[Candidate] | None:
        """The engine-fused ``hybrid`` query through the search pipeline for ``fusion``.

        None when the store is not configured for it (``HIVEMEM_OPENSEARCH_HYBRID=core``) or the
        text has no searchable word; the caller then fuses the legs itself.
        """
        self._check_vector(vector)
        words = bodies.query_words(text)
        if self._options.hybrid != "native" or words is None or limit < 1:
            return None
        body = bodies.hybrid_search(words[0], words[1], vector, where, limit, self._options)
        response = self._search(body, params={"search_pipeline": bodies.pipeline_name(self._names, fusion)})
        return [Candidate(hit["_id"], float(hit["_score"])) for hit in response["hits"]["hits"]]
