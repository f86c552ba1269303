"""The OpenSearch store: the distributed shape's database, shared by every API process and worker.

Memories live in a versioned index (``PREFIX-v1``) behind the alias ``PREFIX``; relations, audit
records and content claims have their own aliases (``PREFIX-relations``, ``-audit``, ``-claims``).
BM25 over ``title``/``content``/``tags`` with the analysis of the SQLite store (porter, English
stopwords dropped from queries), an HNSW ``knn_vector`` whose engine and space type are settings.
Filters sit inside the BM25 bool and inside ``knn.filter``. Request bodies come from
:mod:`search.opensearch.bodies`; templates and pipelines from :mod:`search.opensearch.setup`.

Writes to the memories index go through :class:`search.opensearch.writes.MemoryWriter`, the
lock-free write protocol (claims + conditional writes), and resolution by meaning through
:class:`search.opensearch.planned.PlannedWriter`, which holds per-scope leases
(:mod:`search.opensearch.scope_lease`) while it decides; every request goes through one
:class:`search.opensearch.cluster.Cluster`, the error boundary.

A change of embedding model is a re-embed (:mod:`search.opensearch.reembed`): new indices beside
the live ones, then the aliases move; this process's writes to memories and chunks hold a shared
lock that the move takes alone, and a memory embedded with the model the store left is refused.

Refresh policy: a single write waits for the refresh (``wait_for``) so what ``memorize`` stored
is recallable when it returns; bulk imports (:meth:`OpenSearchStore.put_many`) do not wait and
refresh once at the end; claims and access counters are read by realtime GET and never wait; a
planned write refreshes (``refresh=true``) so the next one's k-NN search sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, suppress
from datetime import datetime
from itertools import islice
from typing import Any

from hivemem.audit import AuditQuery
from hivemem.config import Settings
from hivemem.errors import AuditNotFoundError, ConfigError, MemoryNotFoundError, StoreError
from hivemem.fusion import Candidate
from hivemem.knowledge import KnowledgeChunk, KnowledgeSource
from hivemem.model import (
    GLOBAL_SCOPE,
    AuditEvent,
    DuplicatePolicy,
    FusionMethod,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
)
from hivemem.read_write_lock import ReadWriteLock
from hivemem.resolution import Resolution
from hivemem.tokens import TokenRecord
from search.base import PageMark, SearchFilter, SourceChunks, missing_end
from search.capabilities import SLEEP_LOCK_S, LegQuery, Legs, PlanDecision, ReembedBatch, refuse_stale_vectors
from search.knowledge_delegate import DelegatesKnowledge
from search.opensearch import bodies
from search.opensearch.bodies import IndexNames, IndexOptions
from search.opensearch.client import ClusterTarget, make_client, parse_url
from search.opensearch.cluster import Cluster
from search.opensearch.docs import (
    audit_from_doc,
    audit_lines,
    from_iso,
    memory_from_doc,
    relation_doc,
    relation_from_doc,
    relation_id,
    sleep_lease_id,
    to_iso,
)
from search.opensearch.errors import translate_errors
from search.opensearch.knowledge import KnowledgeIndices
from search.opensearch.memory_search import MemorySearch
from search.opensearch.planned import PlannedWriter
from search.opensearch.reembed import Reembedder
from search.opensearch.scope_lease import SCOPE_LEASE_RENEW_S, SCOPE_LEASE_S, ScopeLeases
from search.opensearch.second_vectors import SecondVectors
from search.opensearch.setup import NEURAL_SEARCH, ensure
from search.opensearch.similarity import bm25_scale_of
from search.opensearch.tokens import TokenIndex
from search.opensearch.tuning import OpenSearchTuning
from search.opensearch.writes import MemoryWriter
from search.recall_params import RecallParams

__all__ = ["OpenSearchStore"]

Json = dict[str, Any]

_PREFIX = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,150}$")
# Ids (or edges) per request of a batch path (a ``terms`` query, an ``_mget``, a ``_bulk`` of
# edges): far under index.max_terms_count (65,536 by default), and a bounded body.
_IDS_PER_REQUEST = 1_000
# Unique, so search_after pages never skip an edge that ties with the page's last one.
_RELATION_ORDER: list[Any] = [{"created_at": "asc"}, {"source_id": "asc"}, {"target_id": "asc"}, {"type": "asc"}]


class OpenSearchStore(DelegatesKnowledge):
    """A :class:`search.base.Store` on an OpenSearch cluster.

    ``write_resolved`` is atomic across processes without locks (see :mod:`search.opensearch.writes`);
    ``write_planned`` serializes the writers of a scope with a lease (:mod:`search.opensearch.planned`).
    Opening creates the templates, indices and aliases that are missing and refuses an index built
    for another embedding model or dimension (``EmbeddingMismatchError``).
    """

    def __init__(
        self,
        url: str,
        *,
        embedding_model: str,
        dimension: int,
        settings: Settings | None = None,
        tuning: OpenSearchTuning | None = None,
        recall: RecallParams | None = None,
        connection_class: type[Any] | None = None,
    ) -> None:
        settings = settings if settings is not None else Settings.model_construct()
        tuning = tuning or OpenSearchTuning()
        self._target: ClusterTarget = parse_url(url)
        prefix = self._target.index or settings.opensearch_index
        if not _PREFIX.match(prefix):
            raise ConfigError(
                f"OpenSearch index prefix {prefix!r} is invalid: lower-case letters, digits, '-' and '_' only"
            )
        self._names = IndexNames(prefix)
        self._options = IndexOptions.of(tuning, recall)
        rrf = self._options.fusion is FusionMethod.RRF
        if self._options.hybrid == "native" and rrf and self._options.bm25_weight != 0.5:
            raise ConfigError(
                "HIVEMEM_OPENSEARCH_HYBRID=native with HIVEMEM_FUSION=rrf weighs both legs equally (the "
                "score-ranker-processor takes no weights); set HIVEMEM_BM25_WEIGHT=0.5 or use hybrid=core"
            )
        self._embedding_model = embedding_model
        self._dimension = dimension
        self._client: Any = make_client(self._target, settings, tuning, connection_class=connection_class)
        self._cluster = Cluster(self._client, self._target)
        self._leases = ScopeLeases(
            self._cluster,
            self._names,
            lease_s=SCOPE_LEASE_S,
            wait_s=tuning.resolve_lock_timeout_s,
            renew_every_s=SCOPE_LEASE_RENEW_S,
        )
        # A sleep pass runs for minutes: its lease is taken over only from a holder that long dead.
        self._sleep_leases = ScopeLeases(self._cluster, self._names, lease_s=SLEEP_LOCK_S, wait_s=0)
        self._vector_parts(dimension)
        self._reembedder = Reembedder(self._cluster, self._names, self._options)
        self._second = SecondVectors(
            self._cluster, self._names, self._options, read=lambda ids: self.get_many(ids, vectors=False)
        )
        # Held shared by every write of this process, and alone by a re-embed's swap.
        self._writes = ReadWriteLock()
        self._tokens = TokenIndex(self._cluster, self._names)
        try:
            report = ensure(
                self._client,
                self._target,
                self._names,
                self._options,
                embedding_model=embedding_model,
                dimension=dimension,
                update=False,
                pipelines=self._options.hybrid == "native",
            )
            self._bm25_scale = bm25_scale_of(self._cluster.call("reading the version", self._client.info))
            if report.skipped:
                raise ConfigError(
                    f"opensearch_hybrid=native needs the {NEURAL_SEARCH} plugin, which {self._target.display} "
                    "does not have; set HIVEMEM_OPENSEARCH_HYBRID=core (the default), which fuses the same way"
                )
        except BaseException:
            self._client.close()
            raise

    def _vector_parts(self, dimension: int) -> None:
        """The parts that write and search vectors, for ``dimension``-long ones."""
        self._writer = MemoryWriter(self._cluster, self._names, dimension)
        self._planned = PlannedWriter(
            self._cluster, self._names, dimension, self._writer, self._leases, self.vector_search
        )
        self._knowledge = KnowledgeIndices(self._cluster, self._names, self._options, dimension)
        self._searches = MemorySearch(self._cluster, self._names, self._options, dimension)

    # -- properties ----------------------------------------------------------------------------

    @property
    def embedding_model(self) -> str:
        return self._embedding_model

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def bm25_scale(self) -> float:
        """This cluster's BM25 score of a match over the modern BM25's (2.2 on OpenSearch 2.x)."""
        return self._bm25_scale

    @property
    def names(self) -> IndexNames:
        """The aliases and indices this store uses."""
        return self._names

    @property
    def client(self) -> Any:
        """The ``opensearchpy.OpenSearch`` client (for setup and diagnostics)."""
        return self._client

    # -- writes --------------------------------------------------------------------------------

    def put(self, memory: Memory, policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> bool:
        with self._writes.reading():
            refuse_stale_vectors([memory], self._embedding_model)
            return self._writer.write(memory, policy)

    def put_many(self, memories: Sequence[Memory], policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> int:
        """Bulk import: claims in one ``_bulk``, memories in another, one refresh (:meth:`put` waits
        for a refresh per memory, up to the index's refresh interval each)."""
        with self._writes.reading():
            refuse_stale_vectors(memories, self._embedding_model)
            return self._writer.put_many(memories, policy)

    def write_resolved(self, incoming: Memory, decide: Callable[[Memory | None], Resolution]) -> Resolution:
        with self._writes.reading():
            refuse_stale_vectors([incoming], self._embedding_model)
            return self._writer.write_resolved(incoming, decide)

    def write_resolved_many(
        self, incoming: Sequence[Memory], decide: Callable[[Memory, Memory | None], Resolution]
    ) -> list[Resolution]:
        with self._writes.reading():
            refuse_stale_vectors(incoming, self._embedding_model)
            return self._writer.write_resolved_many(incoming, decide)

    def write_planned(self, incoming: Sequence[Memory], decide: PlanDecision, *, neighbours: int) -> list[Resolution]:
        """Resolution by meaning under per-scope leases; see :mod:`search.opensearch.planned`."""
        with self._writes.reading():
            refuse_stale_vectors(incoming, self._embedding_model)
            return self._planned.write_planned(incoming, decide, neighbours=neighbours)

    def delete(self, memory_id: str) -> Memory:
        with self._writes.reading():
            old = self._writer.delete(memory_id)
        self._cluster.call(
            "deleting relations",
            lambda: self._client.delete_by_query(
                index=self._names.relations, body={"query": _touching([memory_id])}, refresh=True, conflicts="proceed"
            ),
        )
        self._second.forget(memory_id)
        return old

    def record_access(self, memory_ids: Sequence[str], at: datetime) -> None:
        with self._writes.reading():
            self._writer.record_access(memory_ids, at)

    def replace_source(self, source: KnowledgeSource, chunks: Sequence[KnowledgeChunk]) -> None:
        with self._writes.reading():
            self._knowledge.replace_source(source, chunks)

    def replace_sources(self, documents: Sequence[SourceChunks]) -> None:
        with self._writes.reading():
            self._knowledge.replace_sources(documents)

    def delete_source(self, scope: str, uri: str) -> KnowledgeSource:
        with self._writes.reading():
            return self._knowledge.delete_source(scope, uri)

    def delete_sources(self, scope: str, uris: Sequence[str]) -> list[KnowledgeSource]:
        with self._writes.reading():
            return self._knowledge.delete_sources(scope, uris)

    def sleep_lease(self, *, wait: bool) -> AbstractContextManager[bool]:
        return self._sleep_leases.held_if_free(sleep_lease_id(), wait=wait)

    def add_relation(self, relation: Relation) -> None:
        self.add_relations([relation])

    def add_relations(self, relations: Sequence[Relation]) -> None:
        if not relations:
            return
        ends = sorted({end for r in relations for end in (r.source_id, r.target_id)})
        found = {
            m.id
            for start in range(0, len(ends), _IDS_PER_REQUEST)
            for m in self.get_many(ends[start : start + _IDS_PER_REQUEST], vectors=False)
        }
        missing_end(relations, found)
        for start in range(0, len(relations), _IDS_PER_REQUEST):
            lines: list[Json] = []
            for relation in relations[start : start + _IDS_PER_REQUEST]:
                # create, not index: the first write of an edge wins and a repeat is a no-op (409), as on SQLite.
                lines += [
                    {"create": {"_index": self._names.relations, "_id": relation_id(relation)}},
                    relation_doc(relation),
                ]
            # A refresh shows every write before it: the last request waits for one, for all.
            last = start + _IDS_PER_REQUEST >= len(relations)
            self._cluster.bulk(lines, refresh="wait_for" if last else "false")

    def audit(self, event: AuditEvent) -> None:
        self.audit_many([event])

    def audit_many(self, events: Sequence[AuditEvent]) -> None:
        if events:
            self._cluster.bulk(audit_lines(self._names.audit, events), refresh="wait_for")

    # -- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        current = self._writer.read(memory_id)
        if current is None:
            raise MemoryNotFoundError(f"no memory with id {memory_id}")
        return current.memory

    def get_many(self, memory_ids: Sequence[str], *, vectors: bool = True) -> list[Memory]:
        found = self._writer.read_many(list(dict.fromkeys(memory_ids)), vectors=vectors)
        by_id = {v.memory.id: v.memory for v in found}
        return [by_id[i] for i in memory_ids if i in by_id]

    def find_by_hash(self, scope: str, content_hash: str) -> Memory | None:
        current = self._writer.holder(scope, content_hash)
        return None if current is None else current.memory

    def held_contents(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        return {(v.memory.scope, v.memory.content_hash) for v in self._writer.holders(keys)}

    def thread_neighbours(self, memory_ids: Sequence[str], window: int) -> dict[str, list[tuple[str, int]]]:
        if window < 1:
            return {}
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        # The fields the thread searches need, not the memories (their vectors are most of a document).
        fields = ["scope", "thread", "created_at"]
        found = self._cluster.call(
            "reading threads",
            lambda: self._client.mget(index=self._names.memories, body={"ids": ids}, _source_includes=fields),
        )
        threaded = [
            (str(doc["_id"]), doc["_source"])
            for doc in found["docs"]
            if doc.get("found") and doc["_source"].get("thread")
        ]
        if not threaded:
            return {}
        searches = [
            bodies.thread_side(
                src["scope"], src["thread"], from_iso(src["created_at"]), memory_id, before=before, limit=window
            )
            for memory_id, src in threaded
            for before in (True, False)
        ]
        answers = iter(self._searches.msearch(searches, ["thread"] * len(searches)))
        out: dict[str, list[tuple[str, int]]] = {}
        for memory_id, _ in threaded:
            before, after = next(answers), next(answers)
            out[memory_id] = [
                (str(hit["_id"]), distance)
                for side in (before, after)
                for distance, hit in enumerate(side["hits"]["hits"], start=1)
            ]
        return out

    def count(self, scopes: Sequence[str] | None = None) -> int:
        query: Json = {"match_all": {}} if scopes is None else {"terms": {"scope": list(scopes)}}
        response = self._cluster.call(
            "counting memories", lambda: self._client.count(index=self._names.memories, body={"query": query})
        )
        return int(response["count"])

    def list_memories(
        self,
        where: SearchFilter,
        limit: int,
        *,
        authors: Sequence[str] = (),
        after: PageMark | None = None,
        vectors: bool = True,
    ) -> list[Memory]:
        if limit < 1:
            return []
        filters = bodies.search_filter(where)
        if authors:
            filters.append({"terms": {"author": list(authors)}})
        if after is not None:
            stamp = to_iso(after.created_at)
            later = {"bool": {"filter": [{"term": {"created_at": stamp}}, {"range": {"id": {"gt": after.id}}}]}}
            filters.append(
                {"bool": {"should": [{"range": {"created_at": {"lt": stamp}}}, later], "minimum_should_match": 1}}
            )
        query: Json = {"bool": {"filter": filters}}
        found: list[Memory] = []
        leave_out = () if vectors else (bodies.VECTOR_FIELD,)
        order = [{"created_at": "desc"}, {"id": "asc"}]
        for doc in self._cluster.scan(self._names.memories, query, order, excludes=leave_out):
            found.append(memory_from_doc(doc))
            if len(found) == limit:
                break
        return found

    def scopes(self) -> list[str]:
        return sorted(str(key["scope"]) for key, _ in self._composite({"match_all": {}}, ["scope"], "listing scopes"))

    def tally(self, scopes: Sequence[str]) -> dict[tuple[MemoryType, MemoryState], int]:
        if not scopes:
            return {}
        buckets = self._composite({"terms": {"scope": list(scopes)}}, ["memory_type", "state"], "counting memories")
        return {(MemoryType(k["memory_type"]), MemoryState(k["state"])): n for k, n in buckets}

    def tally_by_scope(self) -> dict[str, dict[tuple[MemoryType, MemoryState], int]]:
        buckets = self._composite({"match_all": {}}, ["scope", "memory_type", "state"], "counting memories")
        tallies: dict[str, dict[tuple[MemoryType, MemoryState], int]] = {}
        for key, count in buckets:
            tallies.setdefault(str(key["scope"]), {})[(MemoryType(key["memory_type"]), MemoryState(key["state"]))] = (
                count
            )
        return tallies

    def _composite(self, query: Json, fields: list[str], action: str) -> list[tuple[Json, int]]:
        """Every bucket of a composite aggregation over ``fields``, page by page, with its count."""
        found: list[tuple[Json, int]] = []
        after: Json | None = None
        while True:
            composite: Json = {"size": 500, "sources": [{f: {"terms": {"field": f}}} for f in fields]}
            if after is not None:
                composite["after"] = after
            body: Json = {"size": 0, "query": query, "aggs": {"groups": {"composite": composite}}}
            agg = self._cluster.call(action, self._search_memories(body))["aggregations"]["groups"]
            found += [(b["key"], int(b["doc_count"])) for b in agg["buckets"]]
            after = agg.get("after_key")
            if not agg["buckets"] or after is None:
                return found

    def _search_memories(self, body: Json) -> Callable[[], Any]:
        return lambda: self._client.search(index=self._names.memories, body=body)

    def keyword_search(self, text: str, where: SearchFilter, limit: int) -> list[Candidate]:
        return self._searches.keyword_search(text, where, limit)

    def vector_search(self, vector: Sequence[float], where: SearchFilter, limit: int) -> list[Candidate]:
        return self._searches.vector_search(vector, where, limit)

    def search_legs(self, queries: Sequence[LegQuery], where: SearchFilter, limit: int) -> list[Legs]:
        """Both legs of every query in one ``_msearch`` round trip; see :class:`search.capabilities.LegQuery`."""
        return self._searches.search_legs(queries, where, limit)

    def native_hybrid(
        self, text: str, vector: Sequence[float], where: SearchFilter, limit: int, *, fusion: FusionMethod
    ) -> list[Candidate] | None:
        """The engine-fused ``hybrid`` query (:meth:`MemorySearch.native_hybrid`), or None."""
        return self._searches.native_hybrid(text, vector, where, limit, fusion=fusion)

    def relations(self, memory_id: str) -> list[Relation]:
        return self.relations_of([memory_id])

    def relations_of(self, memory_ids: Sequence[str]) -> list[Relation]:
        ids = list(dict.fromkeys(memory_ids))
        found: dict[tuple[str, str, str], Relation] = {}
        for start in range(0, len(ids), _IDS_PER_REQUEST):
            query = _touching(ids[start : start + _IDS_PER_REQUEST])
            for doc in self._cluster.scan(self._names.relations, query, _RELATION_ORDER):
                relation = relation_from_doc(doc)
                found[relation.key] = relation
        return sorted(found.values(), key=Relation.oldest_first)

    def audit_event(self, event_id: str) -> AuditEvent:
        docs = list(self._cluster.scan(self._names.audit, {"term": {"event_id": event_id}}, [{"seq": "asc"}]))
        if not docs:
            raise AuditNotFoundError(f"no audit record with id {event_id}")
        return audit_from_doc(docs[0])

    def remove_relation(self, relation: Relation) -> bool:
        line = {"delete": {"_index": self._names.relations, "_id": relation_id(relation)}}
        (item,) = self._cluster.bulk([line], refresh="wait_for")
        return int(item.get("status", 200)) < 300

    def audit_log(self, memory_id: str | None = None) -> list[AuditEvent]:
        query: Json = {"match_all": {}} if memory_id is None else {"term": {"memory_id": memory_id}}
        docs = self._cluster.scan(self._names.audit, query, [{"seq": "asc"}, {"event_id": "asc"}])
        return [audit_from_doc(doc) for doc in docs]

    def audit_search(self, query: AuditQuery) -> list[AuditEvent]:
        filters: list[Json] = []
        if query.memory_id is not None:
            filters.append({"term": {"memory_id": query.memory_id}})
        if query.actions:
            filters.append({"terms": {"action": list(query.actions)}})
        if query.author is not None:
            filters.append({"term": {"author": query.author}})
        if query.scopes is not None:
            filters.append({"terms": {"scope": list(query.scopes)}})
        if query.since is not None or query.until is not None:
            bounds: Json = {}
            if query.since is not None:
                bounds["gte"] = to_iso(query.since)
            if query.until is not None:
                bounds["lt"] = to_iso(query.until)
            filters.append({"range": {"at": bounds}})
        found: Json = {"bool": {"filter": filters}} if filters else {"match_all": {}}
        docs = self._cluster.scan(self._names.audit, found, [{"seq": "desc"}, {"event_id": "desc"}])
        return [audit_from_doc(doc) for doc in islice(docs, query.limit)]

    # -- tokens --------------------------------------------------------------------------------

    def put_token(self, record: TokenRecord) -> None:
        self._tokens.put(record)

    def get_token(self, token_id: str) -> TokenRecord | None:
        return self._tokens.get(token_id)

    def tokens(self) -> list[TokenRecord]:
        return self._tokens.all()

    def revoke_token(self, token_id: str, at: datetime) -> TokenRecord:
        return self._tokens.revoke(token_id, at)

    # -- a second model's vectors (search/opensearch/second_vectors.py) --------------------------

    def second_vectors_pending(self, model: str, limit: int) -> list[Memory]:
        return self._second.pending(model, limit)

    def second_vectors_rescan(self, model: str) -> None:
        self._second.rescan(model)

    def second_vectors_keep_only(self, model: str) -> int:
        return self._second.keep_only(model)

    def second_vectors_remaining(self, model: str) -> int:
        return self._second.remaining(model)

    def put_second_vectors(self, model: str, dimension: int, vectors: Sequence[tuple[Memory, Sequence[float]]]) -> None:
        self._second.put(model, dimension, vectors)

    def second_vector_scores(self, model: str, vector: Sequence[float], memory_ids: Sequence[str]) -> list[Candidate]:
        return self._second.scores(model, vector, memory_ids)

    # -- re-embedding (search/opensearch/reembed.py) --------------------------------------------

    def reembed_remaining(self, model: str) -> int:
        return self._reembedder.remaining(model)

    def reembed_pending(self, model: str, limit: int) -> ReembedBatch:
        return self._reembedder.pending(model, limit)

    def reembed_stage(
        self,
        model: str,
        dimension: int,
        memories: Sequence[tuple[Memory, Sequence[float]]],
        chunks: Sequence[tuple[KnowledgeChunk, Sequence[float]]],
    ) -> None:
        self._reembedder.stage(model, dimension, memories, chunks)

    def reembed_swap(self, model: str, dimension: int) -> bool:
        # This process's writes wait: none lands between the last check and the aliases moving.
        with self._writes.writing():
            if not self._reembedder.swap(model, dimension):
                return False
            self._embedding_model, self._dimension = model, dimension
            self._vector_parts(dimension)
        return True

    # -- lifecycle -----------------------------------------------------------------------------

    def check(self) -> None:
        self.count([GLOBAL_SCOPE])

    def close(self) -> None:
        self._cluster.close()

    def drop(self) -> None:
        """Delete every index, alias and template of this prefix (and its pipelines, if any)."""
        names = self._names
        indices = {names.index(alias) for alias in names.aliases()}
        # After a re-embed, the memories and chunks aliases stand on the indices it made.
        for kind in ("memories", "chunks"):
            with suppress(StoreError):
                indices.update(self._reembedder.live(kind))
        with suppress(StoreError):
            indices.update(self._second.indices())
        with translate_errors(self._target.display, "dropping the indices"):
            self._client.indices.delete(index=",".join(sorted(indices)), ignore_unavailable=True)
            for alias in names.aliases():
                if self._client.indices.exists_index_template(name=names.template(alias)):
                    self._client.indices.delete_index_template(name=names.template(alias))
        if self._options.hybrid == "native":
            for fusion in FusionMethod:
                with translate_errors(self._target.display, "dropping the search pipelines"):
                    self._client.search_pipeline.delete(id=bodies.pipeline_name(names, fusion), ignore=[404])
        self.close()


def _touching(memory_ids: list[str]) -> Json:
    return {
        "bool": {
            "should": [{"terms": {"source_id": memory_ids}}, {"terms": {"target_id": memory_ids}}],
            "minimum_should_match": 1,
        }
    }
