"""Request bodies of the OpenSearch store: pure functions of settings and inputs, no I/O.

Everything the store, ``hivemem opensearch setup`` and ``deploy/opensearch/*.json`` send is built
here, so one place decides the mapping, the queries and the search pipelines, and the tests can
validate every body against the OpenSearch API specification without a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from hivemem.model import FusionMethod
from search.base import SearchFilter
from search.opensearch.docs import to_iso
from search.opensearch.tuning import OpenSearchTuning
from search.query_terms import query_terms
from search.recall_params import RecallParams

__all__ = [
    "SCHEMA_VERSION",
    "VECTOR_FIELD",
    "IndexNames",
    "IndexOptions",
    "analysis_settings",
    "audit_template",
    "claims_template",
    "hybrid_search",
    "index_settings",
    "index_template",
    "keyword_search",
    "knn_query",
    "knn_search",
    "memory_template",
    "model_slug",
    "msearch_lines",
    "pipeline_name",
    "query_words",
    "relations_template",
    "score_to_cosine",
    "search_filter",
    "search_pipeline",
    "searchable_index_settings",
    "text_field",
    "text_query",
    "vector_mapping",
]

Json = dict[str, Any]

# 2: the memories' text is also indexed as one field (``all_text``), which keyword search reads.
SCHEMA_VERSION = "2"
"""Version of the mapping below; bumping it means a new ``PREFIX-vN`` index and a reindex."""

# FTS5's bm25() scores a row's columns as one text (term frequencies summed, one length). The
# memories' text fields are copied into this one field, so Lucene's BM25 reads the same text.
ALL_TEXT_FIELD = "all_text"
_INDEX_ANALYZER = "hivemem_text"
_QUERY_ANALYZER = "hivemem_query"
VECTOR_FIELD = "embedding"


def model_slug(model: str) -> str:
    """``model`` as part of an index name: lower-case letters, digits and dashes."""
    return re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")[:80] or "model"


@dataclass(frozen=True, slots=True)
class IndexNames:
    """The aliases (what the store talks to) and the versioned indices behind them, from one prefix."""

    prefix: str
    version: str = SCHEMA_VERSION

    @property
    def memories(self) -> str:
        return self.prefix

    @property
    def relations(self) -> str:
        return f"{self.prefix}-relations"

    @property
    def audit(self) -> str:
        return f"{self.prefix}-audit"

    @property
    def claims(self) -> str:
        return f"{self.prefix}-claims"

    @property
    def sources(self) -> str:
        return f"{self.prefix}-sources"

    @property
    def chunks(self) -> str:
        return f"{self.prefix}-chunks"

    @property
    def tokens(self) -> str:
        return f"{self.prefix}-tokens"

    def aliases(self) -> tuple[str, ...]:
        """Every alias, memories first."""
        return (self.memories, self.relations, self.audit, self.claims, self.sources, self.chunks, self.tokens)

    def index(self, alias: str) -> str:
        """The versioned index behind ``alias``: a mapping change creates ``-v2`` and moves the alias."""
        return f"{alias}-v{self.version}"

    def template(self, alias: str) -> str:
        """The index template's name for ``alias``."""
        return f"{alias}-template"


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """What the request bodies read: the store's tuning (:class:`OpenSearchTuning`), and the fusion
    arithmetic of recall (:class:`RecallParams`) that the engine-side pipelines repeat."""

    engine: Literal["lucene", "faiss"]
    space_type: Literal["cosinesimil", "innerproduct", "l2"]
    hnsw_m: int
    ef_construction: int
    ef_search: int
    shards: int
    replicas: int
    refresh_interval_ms: int
    hybrid: Literal["core", "native"]
    fusion: FusionMethod
    bm25_weight: float
    rrf_k: int

    @classmethod
    def of(cls, tuning: OpenSearchTuning | None = None, recall: RecallParams | None = None) -> IndexOptions:
        """The options of ``tuning`` and ``recall`` (None: each as configured)."""
        tuning = tuning or OpenSearchTuning()
        recall = recall or RecallParams()
        return cls(
            engine=tuning.opensearch_knn_engine,
            space_type=tuning.opensearch_space_type,
            hnsw_m=tuning.opensearch_hnsw_m,
            ef_construction=tuning.opensearch_ef_construction,
            ef_search=tuning.opensearch_ef_search,
            shards=tuning.opensearch_shards,
            replicas=tuning.opensearch_replicas,
            refresh_interval_ms=tuning.opensearch_refresh_interval_ms,
            hybrid=tuning.opensearch_hybrid,
            fusion=recall.fusion,
            bm25_weight=recall.bm25_weight,
            rrf_k=recall.rrf_k,
        )


# -- index templates -----------------------------------------------------------------------------


def analysis_settings() -> Json:
    # FTS5 in the SQLite store indexes every word (porter, unicode61, diacritics removed) and the
    # query drops stopwords; the same split here: the index analyzer keeps stopwords, so document
    # lengths (and BM25 length normalisation) match, and only the search analyzer removes them.
    # Apostrophes become spaces, as unicode61 splits on them ("user's" -> "user", "s").
    base = ["lowercase", "asciifolding"]
    tokenize = {"type": "custom", "tokenizer": "standard", "char_filter": ["hivemem_apostrophe"]}
    return {
        "char_filter": {"hivemem_apostrophe": {"type": "mapping", "mappings": ["'=>\\u0020", "\u2019=>\\u0020"]}},
        "filter": {"hivemem_stop": {"type": "stop", "stopwords": "_english_"}},
        "analyzer": {
            _INDEX_ANALYZER: {**tokenize, "filter": [*base, "porter_stem"]},
            _QUERY_ANALYZER: {**tokenize, "filter": [*base, "hivemem_stop", "porter_stem"]},
        },
    }


def index_settings(options: IndexOptions, *, knn: bool) -> Json:
    index: Json = {
        "number_of_shards": options.shards,
        "number_of_replicas": options.replicas,
        # Set explicitly, so a search-idle shard still refreshes and a waiting write returns on time.
        "refresh_interval": f"{options.refresh_interval_ms}ms",
    }
    if knn:
        index["knn"] = True
        if options.engine == "faiss":
            # Lucene reads ef_search per query (method_parameters); faiss takes an index default too.
            index["knn.algo_param.ef_search"] = options.ef_search
    return {"index": index}


def searchable_index_settings(options: IndexOptions) -> Json:
    """Settings of an index searched by both legs: k-NN on, and the BM25 analyzers."""
    settings = index_settings(options, knn=True)
    settings["analysis"] = analysis_settings()
    return settings


def vector_mapping(options: IndexOptions, dimension: int) -> Json:
    """The mapping of an HNSW vector field, as configured."""
    return {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": options.engine,
            "space_type": options.space_type,
            "parameters": {"m": options.hnsw_m, "ef_construction": options.ef_construction},
        },
    }


def text_field() -> Json:
    return {"type": "text", "analyzer": _INDEX_ANALYZER, "search_analyzer": _QUERY_ANALYZER}


def index_template(names: IndexNames, alias: str, settings: Json, mappings: Json) -> Json:
    return {
        "index_patterns": [f"{alias}-v*"],
        "priority": 200,
        "template": {"settings": settings, "mappings": mappings},
        "_meta": {"hivemem_schema_version": names.version},
    }


# Fields the memories mapping gained after release: put on an existing index as well (additive).
ADDED_MEMORY_FIELDS: Json = {
    "thread": {"type": "keyword"},
    "stored_at_ms": {"type": "long"},
    "verified_at": {"type": "date_nanos"},
}


def memory_template(names: IndexNames, options: IndexOptions, *, embedding_model: str, dimension: int) -> Json:
    """The index template of the memories index: BM25 text fields, keyword filters, an HNSW vector.

    ``_meta.hivemem`` records the embedding model and dimension; the store refuses a mismatch.
    """
    keyword = {"type": "keyword"}
    mappings: Json = {
        "dynamic": "strict",
        "_meta": {
            "hivemem": {
                "schema_version": names.version,
                "embedding_model": embedding_model,
                "dimension": dimension,
            }
        },
        "properties": {
            "id": keyword,
            "scope": keyword,
            "title": {**text_field(), "copy_to": ALL_TEXT_FIELD},
            "content": {**text_field(), "copy_to": ALL_TEXT_FIELD},
            "tags": {"type": "keyword", "copy_to": ALL_TEXT_FIELD, "fields": {"text": text_field()}},
            ALL_TEXT_FIELD: text_field(),
            "content_hash": keyword,
            "memory_type": keyword,
            "importance": {"type": "double"},
            "source": keyword,
            "related_files": keyword,
            "state": keyword,
            "author": keyword,
            # date_nanos keeps the microseconds the filters compare (`date` would round to millis).
            "created_at": {"type": "date_nanos"},
            "updated_at": {"type": "date_nanos"},
            "last_accessed_at": {"type": "date_nanos"},
            "access_count": {"type": "long"},
            "valid_from": {"type": "date"},
            "valid_to": {"type": "date"},
            "details": {"type": "object", "enabled": False},
            "embedding_model": keyword,
            VECTOR_FIELD: vector_mapping(options, dimension),
            **ADDED_MEMORY_FIELDS,
        },
    }
    return index_template(names, names.memories, searchable_index_settings(options), mappings)


# Fields the relations mapping gained after release: put on an existing index as well (additive).
ADDED_RELATION_FIELDS: Json = {"description": {"type": "text", "index": False}}


def relations_template(names: IndexNames, options: IndexOptions) -> Json:
    """The index template of the relations index (one document per source, target and type)."""
    keyword = {"type": "keyword"}
    properties = {
        "source_id": keyword,
        "target_id": keyword,
        "type": keyword,
        "strength": {"type": "double"},
        "author": keyword,
        "created_at": {"type": "date_nanos"},
        **ADDED_RELATION_FIELDS,
    }
    return index_template(
        names, names.relations, index_settings(options, knn=False), {"dynamic": "strict", "properties": properties}
    )


def audit_template(names: IndexNames, options: IndexOptions) -> Json:
    """The index template of the audit log; ``seq`` orders records as they were appended."""
    keyword = {"type": "keyword"}
    properties = {
        "seq": {"type": "long"},
        "event_id": keyword,
        "action": keyword,
        "memory_id": keyword,
        "scope": keyword,
        "author": keyword,
        "detail": {"type": "object", "enabled": False},
        "at": {"type": "date_nanos"},
    }
    return index_template(
        names, names.audit, index_settings(options, knn=False), {"dynamic": "strict", "properties": properties}
    )


def claims_template(names: IndexNames, options: IndexOptions) -> Json:
    """The index template of content claims: which memory holds a (scope, content hash)."""
    keyword = {"type": "keyword"}
    properties = {"memory_id": keyword, "scope": keyword, "content_hash": keyword, "claimed_at": {"type": "date"}}
    return index_template(
        names, names.claims, index_settings(options, knn=False), {"dynamic": "strict", "properties": properties}
    )


def tokens_template(names: IndexNames, options: IndexOptions) -> Json:
    """The index template of token records: a keyed hash of each token, never the token."""
    keyword = {"type": "keyword"}
    properties = {
        "id": keyword,
        "principal": keyword,
        "grants": {"type": "object", "enabled": False},
        "digest": {"type": "keyword", "index": False},
        "created_at": {"type": "date_nanos"},
        "expires_at": {"type": "date_nanos"},
        "revoked_at": {"type": "date_nanos"},
        "created_by": keyword,
    }
    return index_template(
        names, names.tokens, index_settings(options, knn=False), {"dynamic": "strict", "properties": properties}
    )


# -- search pipelines ----------------------------------------------------------------------------


def pipeline_name(names: IndexNames, fusion: FusionMethod) -> str:
    """The search pipeline the native hybrid query uses for ``fusion``."""
    return f"{names.prefix}-hybrid-{fusion.value}"


def search_pipeline(options: IndexOptions, fusion: FusionMethod) -> Json:
    """The search pipeline doing ``fusion`` in the engine, with the arithmetic of :mod:`hivemem.fusion`.

    ``min_max`` + ``arithmetic_mean`` with weights ``[bm25_weight, 1 - bm25_weight]`` (the hybrid
    query lists the BM25 sub-query first), or ``rrf`` with ``rank_constant = rrf_k``.
    """
    if fusion is FusionMethod.RRF:
        return {
            "description": "hivemem: reciprocal-rank fusion of the BM25 and k-NN legs",
            "phase_results_processors": [
                {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": options.rrf_k}}}
            ],
        }
    weight = round(options.bm25_weight, 6)
    return {
        "description": "hivemem: min-max normalised, weighted mean of the BM25 and k-NN legs",
        "phase_results_processors": [
            {
                "normalization-processor": {
                    "normalization": {"technique": "min_max"},
                    "combination": {
                        "technique": "arithmetic_mean",
                        "parameters": {"weights": [weight, round(1.0 - weight, 6)]},
                    },
                }
            }
        ],
    }


# -- queries -------------------------------------------------------------------------------------


def query_words(text: str) -> tuple[str, bool] | None:
    """The words a BM25 query searches (:func:`search.query_terms.query_terms`, as on SQLite), joined
    for a ``match``, and whether they are only stopwords; None when there are none. A query of
    stopwords alone still searches (with the index analyzer), as it does on SQLite.
    """
    terms = query_terms(text)
    return None if terms is None else (" ".join(terms[0]), terms[1])


# `date_nanos` holds 1970-01-01 to 2262-04-11; a bound beyond that is the same as the range's end.
_NANOS_FIRST = datetime(1970, 1, 1, tzinfo=UTC)
_NANOS_LAST = datetime(2262, 4, 11, tzinfo=UTC)


def _nanos_bound(value: datetime) -> datetime:
    return min(max(value, _NANOS_FIRST), _NANOS_LAST)


def search_filter(where: SearchFilter) -> list[Json]:
    """Filter clauses for ``where``; they go inside the BM25 bool and the k-NN ``filter``, never after."""
    clauses: list[Json] = [
        {"terms": {"scope": list(where.scopes)}},
        {"terms": {"state": [s.value for s in where.states]}},
    ]
    if where.memory_types:
        clauses.append({"terms": {"memory_type": [t.value for t in where.memory_types]}})
    if where.tags:
        clauses.append({"terms": {"tags": list(where.tags)}})
    created: Json = {}
    if where.created_after is not None:
        created["gte"] = to_iso(_nanos_bound(where.created_after))
    if where.created_before is not None:
        created["lt"] = to_iso(_nanos_bound(where.created_before))
    if created:
        clauses.append({"range": {"created_at": created}})
    if where.exclude_ids:
        clauses.append({"bool": {"must_not": [{"terms": {"id": list(where.exclude_ids)}}]}})
    return clauses


def text_query(words: str, stopwords_only: bool, fields: Sequence[str] = (ALL_TEXT_FIELD,)) -> Json:
    """The BM25 query of ``words`` over ``fields`` (default: the memories' text as one field).

    Several fields are blended term by term (``cross_fields``: one document frequency per term
    across them); OpenSearch has no ``combined_fields`` query (an Elasticsearch one)."""
    if stopwords_only:
        # The search analyzer would drop every word; search them with the index analyzer instead.
        return {
            "multi_match": {"query": words, "fields": list(fields), "type": "most_fields", "analyzer": _INDEX_ANALYZER}
        }
    if len(fields) == 1:
        return {"match": {fields[0]: {"query": words, "operator": "or"}}}
    return {"multi_match": {"query": words, "fields": list(fields), "type": "cross_fields", "operator": "or"}}


def _keyword_query(words: str, stopwords_only: bool, where: SearchFilter) -> Json:
    return {"bool": {"must": [text_query(words, stopwords_only)], "filter": search_filter(where)}}


def knn_query(vector: Sequence[float], filters: list[Json], k: int, options: IndexOptions) -> Json:
    """The k-NN query with ``filters`` inside the graph search, so ``k`` neighbours all pass them."""
    return {
        "knn": {
            VECTOR_FIELD: {
                "vector": [float(x) for x in vector],
                "k": k,
                "filter": {"bool": {"filter": filters}},
                "method_parameters": {"ef_search": max(options.ef_search, k)},
            }
        }
    }


def _knn_query(vector: Sequence[float], where: SearchFilter, k: int, options: IndexOptions) -> Json:
    return knn_query(vector, search_filter(where), k, options)


def keyword_search(words: str, stopwords_only: bool, where: SearchFilter, limit: int) -> Json:
    """The BM25 leg: best ``limit`` ids, ties broken by id (as the SQLite store does)."""
    return {
        "size": limit,
        "_source": False,
        "track_total_hits": False,
        "query": _keyword_query(words, stopwords_only, where),
        "sort": ["_score", {"id": "asc"}],
    }


def knn_search(vector: Sequence[float], where: SearchFilter, limit: int, options: IndexOptions) -> Json:
    """The k-NN leg: the filter runs inside the graph search, so ``k`` neighbours all pass it."""
    return {
        "size": limit,
        "_source": False,
        "track_total_hits": False,
        "query": _knn_query(vector, where, limit, options),
    }


def thread_side(scope: str, thread: str, created_at: datetime, memory_id: str, *, before: bool, limit: int) -> Json:
    """The ``limit`` memories of a thread just before (or after) one, nearest first.

    A thread is ordered by ``created_at``, then id, as on SQLite: "before" is an earlier time, or the
    same time and a smaller id.
    """
    at = to_iso(created_at)
    earlier, order = ("lt", "desc") if before else ("gt", "asc")
    return {
        "size": limit,
        "_source": False,
        "track_total_hits": False,
        "query": {
            "bool": {
                "filter": [{"term": {"scope": scope}}, {"term": {"thread": thread}}],
                "should": [
                    {"range": {"created_at": {earlier: at}}},
                    {"bool": {"filter": [{"term": {"created_at": at}}, {"range": {"id": {earlier: memory_id}}}]}},
                ],
                "minimum_should_match": 1,
            }
        },
        "sort": [{"created_at": order}, {"id": order}],
    }


def hybrid_search(
    words: str, stopwords_only: bool, vector: Sequence[float], where: SearchFilter, limit: int, options: IndexOptions
) -> Json:
    """The native ``hybrid`` query: BM25 first, k-NN second (the pipeline weights are in that order)."""
    return {
        "size": limit,
        "_source": False,
        "track_total_hits": False,
        "query": {
            "hybrid": {
                "queries": [_keyword_query(words, stopwords_only, where), _knn_query(vector, where, limit, options)]
            }
        },
    }


def msearch_lines(index: str, bodies: Sequence[Json]) -> list[Json]:
    """The NDJSON lines of one ``_msearch``: a header naming ``index``, then the body, per search."""
    lines: list[Json] = []
    for body in bodies:
        lines += [{"index": index}, body]
    return lines


def score_to_cosine(score: float, space_type: str) -> float:
    """Undo the k-NN plugin's score translation, so the vector leg carries cosine as on SQLite.

    Vectors are L2-normalised (the Embedder contract), so inner product and L2 map to cosine too.
    """
    if space_type == "cosinesimil":
        return 2.0 * score - 1.0
    if space_type == "innerproduct":
        return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score
    squared_distance = 1.0 / score - 1.0
    return 1.0 - squared_distance / 2.0
