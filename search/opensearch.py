"""The OpenSearch store: the distributed shape's database, shared by every API process and worker.

Memories live in a versioned index (``PREFIX-v1``) behind the alias ``PREFIX``; relations, audit
records and content claims have their own aliases (``PREFIX-relations``, ``-audit``, ``-claims``).
BM25 over ``title``/``content``/``tags`` with the analysis of the SQLite store (porter, English
stopwords dropped from queries), an HNSW ``knn_vector`` whose engine and space type are settings.
Filters sit inside the BM25 bool and inside ``knn.filter``. Request bodies come from
:mod:`search.opensearch_bodies`; templates and pipelines from :mod:`search.opensearch_setup`.

Refresh policy: a single write waits for the refresh (``wait_for``) so what ``memorize`` stored
is recallable when it returns; bulk imports (:meth:`OpenSearchStore.put_many`) do not wait and
refresh once at the end; claims and access counters are read by realtime GET and never wait.

Over the 500-line mark on purpose: it is the one Store class, and most of it is the lock-free
write protocol (claims + conditional writes) that must be read as a whole to be trusted.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from hivemem.config import Settings
from hivemem.errors import (
    ConfigError,
    DuplicateMemoryError,
    EmbeddingMismatchError,
    MemoryNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from hivemem.fusion import Candidate
from hivemem.model import AuditEvent, DuplicatePolicy, FusionMethod, Memory, Relation
from hivemem.resolution import Resolution
from search import opensearch_bodies as bodies
from search.base import SearchFilter
from search.opensearch_bodies import IndexNames, IndexOptions
from search.opensearch_client import ClusterTarget, make_client, parse_url, translate_errors
from search.opensearch_docs import (
    audit_doc,
    audit_from_doc,
    claim_id,
    from_iso,
    memory_doc,
    memory_from_doc,
    relation_doc,
    relation_from_doc,
    relation_id,
    to_iso,
)
from search.opensearch_setup import ensure
from search.recall import LegQuery, Legs

__all__ = ["OpenSearchStore"]

Json = dict[str, Any]

_PREFIX = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,150}$")
# A claim whose memory is missing (or holds other content) is another writer in flight between its
# two requests, or the leftover of a writer that died there. Wait for the first; take over the
# second once the claim is older than this lease.
_CLAIM_LEASE_S = 30.0
_MAX_ATTEMPTS = 200
_PAGE = 1000


@dataclass(frozen=True, slots=True)
class _Versioned:
    """A memory as read, with the sequence number and primary term that guard a conditional write."""

    memory: Memory
    seq_no: int
    primary_term: int


def _backoff(attempt: int) -> None:
    # Jitter spreads writers that collided on one document, so one of them wins the next round.
    time.sleep(min(0.2, 0.002 * (2 ** min(attempt, 7))) * random.random())


class OpenSearchStore:
    """A :class:`search.base.Store` on an OpenSearch cluster.

    ``write_resolved`` is atomic across processes without locks (see :meth:`write_resolved`).
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
        connection_class: type[Any] | None = None,
    ) -> None:
        settings = settings if settings is not None else Settings.model_construct()
        self._target: ClusterTarget = parse_url(url)
        prefix = self._target.index or settings.opensearch_index
        if not _PREFIX.match(prefix):
            raise ConfigError(
                f"OpenSearch index prefix {prefix!r} is invalid: lower-case letters, digits, '-' and '_' only"
            )
        self._names = IndexNames(prefix)
        self._options = IndexOptions.from_settings(settings)
        rrf = self._options.fusion is FusionMethod.RRF
        if self._options.hybrid == "native" and rrf and self._options.bm25_weight != 0.5:
            raise ConfigError(
                "HIVEMEM_OPENSEARCH_HYBRID=native with HIVEMEM_FUSION=rrf weighs both legs equally (the "
                "score-ranker-processor takes no weights); set HIVEMEM_BM25_WEIGHT=0.5 or use hybrid=core"
            )
        self._embedding_model = embedding_model
        self._dimension = dimension
        self._closed = False
        self._client: Any = make_client(self._target, settings, connection_class=connection_class)
        try:
            ensure(
                self._client,
                self._target,
                self._names,
                self._options,
                embedding_model=embedding_model,
                dimension=dimension,
                update=False,
                pipelines=self._options.hybrid == "native",
            )
        except BaseException:
            self._client.close()
            raise

    # -- properties ----------------------------------------------------------------------------

    @property
    def embedding_model(self) -> str:
        return self._embedding_model

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def names(self) -> IndexNames:
        """The aliases and indices this store uses."""
        return self._names

    @property
    def client(self) -> Any:
        """The ``opensearchpy.OpenSearch`` client (for setup and diagnostics)."""
        return self._client

    # -- plumbing ------------------------------------------------------------------------------

    def _call(self, action: str, fn: Callable[[], Any]) -> Any:
        if self._closed:
            raise StoreUnavailableError("the store is closed")
        with translate_errors(self._target, action):
            return fn()

    def _bulk(self, lines: list[Json], refresh: str) -> list[Json]:
        """One ``_bulk``; returns each item's result. Version conflicts (409) are left to the caller."""
        response = self._call("bulk write", lambda: self._client.bulk(body=lines, refresh=refresh))
        items = [next(iter(item.values())) for item in response["items"]]
        for item in items:
            status = int(item.get("status", 200))
            if status >= 300 and status not in (404, 409):
                error = item.get("error", {})
                raise StoreError(f"OpenSearch bulk item {item.get('_id')} failed ({status}): {error}")
        return items

    def _get_doc(self, alias: str, doc_id: str) -> Json | None:
        from opensearchpy import NotFoundError

        if self._closed:
            raise StoreUnavailableError("the store is closed")
        try:
            with translate_errors(self._target, f"reading {alias}/{doc_id}"):
                return dict(self._client.get(index=alias, id=doc_id))
        except StoreError as exc:
            if isinstance(exc.__cause__, NotFoundError) and "index_not_found" not in str(exc):
                return None
            raise

    def _read(self, memory_id: str) -> _Versioned | None:
        doc = self._get_doc(self._names.memories, memory_id)
        if doc is None or not doc.get("found", False):
            return None
        return _Versioned(memory_from_doc(doc["_source"]), int(doc["_seq_no"]), int(doc["_primary_term"]))

    def _scan(self, alias: str, query: Json, sort: list[Any]) -> Iterator[Json]:
        """Every matching ``_source``, in ``sort`` order, page by page (``search_after``)."""
        after: list[Any] | None = None
        while True:
            body: Json = {"size": _PAGE, "query": query, "sort": sort, "track_total_hits": False}
            if after is not None:
                body["search_after"] = after
            response = self._call(f"searching {alias}", partial(self._client.search, index=alias, body=body))
            hits = response["hits"]["hits"]
            for hit in hits:
                yield hit["_source"]
            if len(hits) < _PAGE:
                return
            after = hits[-1]["sort"]

    # -- claims: one memory per (scope, content hash) --------------------------------------------

    def _claim(self, memory: Memory) -> bool:
        """Make ``memory`` the holder of its (scope, content hash). Returns True if the claim is new.

        Raises ``DuplicateMemoryError`` when another live memory holds it.
        """
        cid = claim_id(memory.scope, memory.content_hash)
        claim = {
            "memory_id": memory.id,
            "scope": memory.scope,
            "content_hash": memory.content_hash,
            "claimed_at": to_iso(datetime.now(UTC)),
        }
        from opensearchpy import ConflictError

        for attempt in range(_MAX_ATTEMPTS):
            try:
                self._call(
                    "claiming content",
                    lambda: self._client.index(index=self._names.claims, id=cid, body=claim, op_type="create"),
                )
                return True
            except StoreError as exc:
                if not isinstance(exc.__cause__, ConflictError):
                    raise
            held = self._get_doc(self._names.claims, cid)
            if held is None or not held.get("found", False):
                continue  # released meanwhile: try to create it again
            holder_id = held["_source"]["memory_id"]
            if holder_id == memory.id:
                return False
            holder = self._read(holder_id)
            if holder is not None and (holder.memory.scope, holder.memory.content_hash) == (
                memory.scope,
                memory.content_hash,
            ):
                raise DuplicateMemoryError(
                    f"scope {memory.scope!r} already holds a memory with this content "
                    f"(hash {memory.content_hash[:12]}): {holder_id}"
                )
            age = (datetime.now(UTC) - from_iso(held["_source"]["claimed_at"])).total_seconds()
            if age < _CLAIM_LEASE_S:
                _backoff(attempt)
                continue
            try:
                self._call(
                    "taking over a stale claim",
                    partial(
                        self._client.index,
                        index=self._names.claims,
                        id=cid,
                        body=claim,
                        if_seq_no=held["_seq_no"],
                        if_primary_term=held["_primary_term"],
                    ),
                )
                return True
            except StoreError as exc:
                if not isinstance(exc.__cause__, ConflictError):
                    raise
        raise StoreUnavailableError(f"could not claim content {memory.content_hash[:12]} in {memory.scope!r}")

    def _release(self, scope: str, content_hash: str, memory_id: str) -> None:
        """Drop the claim on (scope, content hash) if ``memory_id`` still holds it."""
        cid = claim_id(scope, content_hash)
        held = self._get_doc(self._names.claims, cid)
        if held is None or not held.get("found", False) or held["_source"]["memory_id"] != memory_id:
            return
        # A conditional delete: if another writer took the claim meanwhile, it stays theirs.
        self._bulk(
            [
                {
                    "delete": {
                        "_index": self._names.claims,
                        "_id": cid,
                        "if_seq_no": held["_seq_no"],
                        "if_primary_term": held["_primary_term"],
                    }
                }
            ],
            refresh="false",
        )

    # -- writes --------------------------------------------------------------------------------

    def _write(
        self, memory: Memory, policy: DuplicatePolicy, *, expected: _Versioned | None = None, read: bool = True
    ) -> bool:
        """Claim ``memory``'s content, then write it: create when new, else a conditional index.

        ``expected`` is the version ``decide`` saw (write_resolved): a newer one on the cluster
        raises ``_Conflict`` so the caller decides again. Otherwise a conflict re-reads and retries.
        """
        doc = memory_doc(memory, self._dimension)  # a bad vector fails here, before anything is written
        for attempt in range(_MAX_ATTEMPTS):
            current = expected if expected is not None else (self._read(memory.id) if read else None)
            if current is not None and policy is DuplicatePolicy.FAIL:
                raise DuplicateMemoryError(f"memory {memory.id} already exists")
            if current is not None and policy is DuplicatePolicy.SKIP:
                return False
            self._claim(memory)
            action: Json = {"_index": self._names.memories, "_id": memory.id}
            if current is None:
                line: Json = {"create": action}
            else:
                action["if_seq_no"] = current.seq_no
                action["if_primary_term"] = current.primary_term
                line = {"index": action}
            (item,) = self._bulk([line, doc], refresh="wait_for")
            if int(item.get("status", 200)) == 409:
                if expected is not None:
                    raise _Conflict
                read = True
                _backoff(attempt)
                continue
            if current is not None:
                old = current.memory
                if (old.scope, old.content_hash) != (memory.scope, memory.content_hash):
                    self._release(old.scope, old.content_hash, memory.id)
            return True
        raise StoreUnavailableError(f"memory {memory.id}: too many concurrent writers, giving up")

    def put(self, memory: Memory, policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> bool:
        return self._write(memory, policy)

    def put_many(self, memories: Sequence[Memory], policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> int:
        """Bulk import: write every memory without waiting for refreshes, then refresh once.

        Same rules per memory as :meth:`put` (claims included); returns how many were written.
        Raises ``DuplicateMemoryError`` (under FAIL) after writing the others.
        """
        docs = [memory_doc(m, self._dimension) for m in memories]
        written, duplicates = 0, []
        existing = {m.id for m in self.get_many([m.id for m in memories])}
        lines: list[Json] = []
        for memory, doc in zip(memories, docs, strict=True):
            if memory.id in existing and policy is not DuplicatePolicy.OVERWRITE:
                if policy is DuplicatePolicy.FAIL:
                    duplicates.append(memory.id)
                continue
            try:
                self._claim(memory)
            except DuplicateMemoryError:
                duplicates.append(memory.id)
                continue
            lines += [
                {"index" if memory.id in existing else "create": {"_index": self._names.memories, "_id": memory.id}}
            ]
            lines.append(doc)
        if lines:
            items = self._bulk(lines, refresh="false")
            written = sum(1 for item in items if int(item.get("status", 200)) < 300)
            duplicates += [str(item.get("_id")) for item in items if int(item.get("status", 200)) == 409]
        self._call("refreshing after a bulk import", lambda: self._client.indices.refresh(index=self._names.memories))
        if duplicates and policy is DuplicatePolicy.FAIL:
            raise DuplicateMemoryError(f"{len(duplicates)} memories already existed: {duplicates[:5]}")
        return written

    def write_resolved(self, incoming: Memory, decide: Callable[[Memory | None], Resolution]) -> Resolution:
        # No lock, and nothing a crashed process can leave held. Uniqueness of (scope, hash) comes
        # from the claim document, created with op_type=create: of two racing writers exactly one
        # creates it, the other gets 409 and reinforces what the winner wrote. An update is a
        # conditional write on the _seq_no/_primary_term that `decide` saw; a 409 means another
        # writer got there first, so we read again and call `decide` again, and no update is lost.
        # A distributed lock would need leases, fencing and a cleanup path for dead holders.
        for attempt in range(_MAX_ATTEMPTS):
            current = self._holder(incoming.scope, incoming.content_hash)
            resolution = decide(None if current is None else current.memory)
            target = resolution.memory
            expected = current if current is not None and current.memory.id == target.id else None
            try:
                self._write(target, DuplicatePolicy.OVERWRITE, expected=expected, read=expected is None)
            except (_Conflict, DuplicateMemoryError) as exc:
                if isinstance(exc, DuplicateMemoryError) and current is not None:
                    raise
                _backoff(attempt)
                continue
            return resolution
        raise StoreUnavailableError(f"could not resolve {incoming.id}: too many concurrent writers")

    def _holder(self, scope: str, content_hash: str) -> _Versioned | None:
        held = self._get_doc(self._names.claims, claim_id(scope, content_hash))
        if held is None or not held.get("found", False):
            return None
        current = self._read(held["_source"]["memory_id"])
        if current is None or (current.memory.scope, current.memory.content_hash) != (scope, content_hash):
            return None
        return current

    def delete(self, memory_id: str) -> Memory:
        for attempt in range(_MAX_ATTEMPTS):
            current = self._read(memory_id)
            if current is None:
                raise MemoryNotFoundError(f"no memory with id {memory_id}")
            line = {
                "delete": {
                    "_index": self._names.memories,
                    "_id": memory_id,
                    "if_seq_no": current.seq_no,
                    "if_primary_term": current.primary_term,
                }
            }
            (item,) = self._bulk([line], refresh="wait_for")
            status = int(item.get("status", 200))
            if status == 409:
                _backoff(attempt)
                continue
            if status == 404:
                raise MemoryNotFoundError(f"no memory with id {memory_id}")
            old = current.memory
            self._release(old.scope, old.content_hash, memory_id)
            self._call(
                "deleting relations",
                lambda: self._client.delete_by_query(
                    index=self._names.relations, body={"query": _touching(memory_id)}, refresh=True, conflicts="proceed"
                ),
            )
            return old
        raise StoreUnavailableError(f"memory {memory_id}: too many concurrent writers, giving up")

    def record_access(self, memory_ids: Sequence[str], at: datetime) -> None:
        pending = list(dict.fromkeys(memory_ids))
        for attempt in range(_MAX_ATTEMPTS):
            if not pending:
                return
            current = self._read_many(pending)
            lines: list[Json] = []
            for versioned in current:
                m = versioned.memory
                action = {
                    "_index": self._names.memories,
                    "_id": m.id,
                    "if_seq_no": versioned.seq_no,
                    "if_primary_term": versioned.primary_term,
                }
                bumped = replace(m, access_count=m.access_count + 1, last_accessed_at=at)
                lines += [{"index": action}, memory_doc(bumped, self._dimension)]
            if not lines:
                return
            # Counters are read by realtime GET, and recall never sorts on them: no refresh wait.
            items = self._bulk(lines, refresh="false")
            pending = [str(item["_id"]) for item in items if int(item.get("status", 200)) == 409]
            if pending:
                _backoff(attempt)
        raise StoreUnavailableError("record_access: too many concurrent writers, giving up")

    def add_relation(self, relation: Relation) -> None:
        ends = {relation.source_id, relation.target_id}
        if len(self.get_many(list(ends))) < len(ends):
            raise MemoryNotFoundError(f"relation {relation.source_id} -> {relation.target_id}: missing end")
        line = {"create": {"_index": self._names.relations, "_id": relation_id(relation)}}
        # create, not index: the first write of an edge wins and a repeat is a no-op (409), as on SQLite.
        self._bulk([line, relation_doc(relation)], refresh="wait_for")

    def audit(self, event: AuditEvent) -> None:
        event_id = uuid.uuid4().hex
        line = {"create": {"_index": self._names.audit, "_id": event_id}}
        self._bulk([line, audit_doc(event, time.time_ns(), event_id)], refresh="wait_for")

    # -- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        current = self._read(memory_id)
        if current is None:
            raise MemoryNotFoundError(f"no memory with id {memory_id}")
        return current.memory

    def _read_many(self, memory_ids: Sequence[str]) -> list[_Versioned]:
        if not memory_ids:
            return []
        ids = list(memory_ids)
        response = self._call(
            "reading memories", lambda: self._client.mget(index=self._names.memories, body={"ids": ids})
        )
        return [
            _Versioned(memory_from_doc(doc["_source"]), int(doc["_seq_no"]), int(doc["_primary_term"]))
            for doc in response["docs"]
            if doc.get("found")
        ]

    def get_many(self, memory_ids: Sequence[str]) -> list[Memory]:
        by_id = {v.memory.id: v.memory for v in self._read_many(list(dict.fromkeys(memory_ids)))}
        return [by_id[i] for i in memory_ids if i in by_id]

    def find_by_hash(self, scope: str, content_hash: str) -> Memory | None:
        current = self._holder(scope, content_hash)
        return None if current is None else current.memory

    def count(self, scopes: Sequence[str] | None = None) -> int:
        query: Json = {"match_all": {}} if scopes is None else {"terms": {"scope": list(scopes)}}
        response = self._call(
            "counting memories", lambda: self._client.count(index=self._names.memories, body={"query": query})
        )
        return int(response["count"])

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
        return dict(self._call("searching memories", lambda: self._client.search(index=index, body=body, **params)))

    def keyword_search(self, text: str, where: SearchFilter, limit: int) -> list[Candidate]:
        body = self._keyword_body(text, where, limit)
        return [] if body is None else self._keyword_hits(self._search(body))

    def vector_search(self, vector: Sequence[float], where: SearchFilter, limit: int) -> list[Candidate]:
        body = self._knn_body(vector, where, limit)
        return [] if body is None else self._knn_hits(self._search(body))

    def search_legs(self, queries: Sequence[LegQuery], where: SearchFilter, limit: int) -> list[Legs]:
        """Both legs of every query in one ``_msearch`` round trip; see :class:`search.recall.LegQuery`."""
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
        lines = bodies.msearch_lines(self._names.memories, searches)
        response = self._call("searching memories (msearch)", lambda: self._client.msearch(body=lines))
        for (i, leg), item in zip(plan, response["responses"], strict=True):
            if "error" in item:
                error = item["error"]
                reason = error.get("reason") if isinstance(error, dict) else error
                raise StoreError(f"OpenSearch {leg} search failed ({item.get('status')}): {reason}")
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

    def relations(self, memory_id: str) -> list[Relation]:
        docs = self._scan(self._names.relations, _touching(memory_id), [{"created_at": "asc"}, {"type": "asc"}])
        return [relation_from_doc(doc) for doc in docs]

    def audit_log(self, memory_id: str | None = None) -> list[AuditEvent]:
        query: Json = {"match_all": {}} if memory_id is None else {"term": {"memory_id": memory_id}}
        docs = self._scan(self._names.audit, query, [{"seq": "asc"}, {"event_id": "asc"}])
        return [audit_from_doc(doc) for doc in docs]

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._client.close()

    def drop(self) -> None:
        """Delete every index, alias and template of this prefix (and its pipelines, if any)."""
        names = self._names
        indices = ",".join(names.index(alias) for alias in names.aliases())
        with translate_errors(self._target, "dropping the indices"):
            self._client.indices.delete(index=indices, ignore_unavailable=True)
            for alias in names.aliases():
                if self._client.indices.exists_index_template(name=names.template(alias)):
                    self._client.indices.delete_index_template(name=names.template(alias))
        if self._options.hybrid == "native":
            for fusion in FusionMethod:
                with translate_errors(self._target, "dropping the search pipelines"):
                    self._client.search_pipeline.delete(id=bodies.pipeline_name(names, fusion), ignore=[404])
        self.close()


class _Conflict(Exception):
    """A conditional write lost to another writer; the caller reads and decides again."""


def _touching(memory_id: str) -> Json:
    return {
        "bool": {
            "should": [{"term": {"source_id": memory_id}}, {"term": {"target_id": memory_id}}],
            "minimum_should_match": 1,
        }
    }
