"""A second model's vectors of the memories of an OpenSearch store, for recall's second dense leg.

**Where they live.** One index per second model beside the memories (``<alias>-second-<model>``),
one document per memory: its id, the content hash the vector was made from, and the vector as
base64 float32 (a ``binary`` field: nothing in it is searched, so no k-NN field and no HNSW graph
to build). Recall reads the vectors of its candidates only (the other legs' top 100 or so) with
one ``_mget`` that also reads each candidate's live content hash: a vector made from older content
scores nothing. A deleted memory's vectors are deleted with it (:meth:`SecondVectors.forget`); one
deleted between the filler's check that it exists and its write leaves a vector that scores
nothing either, since no live memory has its id.

**Finding what is pending.** The memories index has no change log, so every write of a memory
document stamps it with the writer's clock (``stored_at_ms``, :func:`search.opensearch.docs.memory_doc`;
access counters keep the stamp they had). The first look reads every memory in id order; each
later look reads the memories stamped since the previous look began, less :data:`SLACK_MS` for
refresh lag and writers whose clocks run a little behind, and checks them against the second
index with one ``_mget`` a page. A look reads ids and hashes only and fetches whole memories for
what is pending. Memories it named and the caller has not stored yet are not named again until
their content changes, or :meth:`SecondVectors.rescan`. Every :data:`FULL_LOOK_S` a look starts from the
beginning again, so a writer whose clock is far behind delays a vector, never loses it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hivemem.fusion import Candidate
from hivemem.model import Memory
from search.opensearch import bodies
from search.opensearch.bodies import IndexNames, IndexOptions, model_slug
from search.opensearch.cluster import Cluster
from search.opensearch.docs import STAMP_FIELD
from search.opensearch.errors import AlreadyExists
from search.vector_math import checked_unit, ranked_cosines, unit

__all__ = ["FULL_LOOK_S", "SLACK_MS", "SecondVectors"]

Json = dict[str, Any]

SLACK_MS = 120_000
"""How far before the previous look's start a look reads again: a refresh (1 s) and clock skew."""

FULL_LOOK_S = 3600.0
"""How often a look reads every memory again, whatever the stamps say."""

_PAGE = 500


def _encode(vector: np.ndarray) -> str:
    return base64.b64encode(vector.astype(np.float32).tobytes()).decode("ascii")


@dataclass(slots=True)
class _Look:
    """Where the pending looks of one model stand."""

    since_ms: int | None = None  # None: the next pass reads every memory, in id order
    after: list[Any] | None = None  # the sort values of the last memory read by the pass under way
    started_ms: int = 0  # when the pass under way began
    full_at: float = 0.0  # when the last pass over every memory began (time.monotonic)
    named: dict[str, str] = field(default_factory=dict)  # handed out, not stored yet: id -> content hash


class SecondVectors:
    """The second models' vectors of one OpenSearch store (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        names: IndexNames,
        options: IndexOptions,
        read: Callable[[Sequence[str]], list[Memory]],
    ) -> None:
        """``read``: the store's read of memories by id, without their vectors, in the order asked."""
        self._cluster = cluster
        self._names = names
        self._options = options
        self._read = read
        self._looks: dict[str, _Look] = {}

    # -- indices -------------------------------------------------------------------------------

    def index(self, model: str) -> str:
        """The index of ``model``'s vectors."""
        return f"{self._names.memories}-second-{model_slug(model)}"

    def indices(self) -> list[str]:
        """Every second model's index of this store."""
        pattern = f"{self._names.memories}-second-*"
        client = self._cluster.client
        found = self._cluster.call(
            "listing the second models' indices",
            lambda: client.indices.get(index=pattern, allow_no_indices=True, ignore_unavailable=True),
        )
        return sorted(found)

    def _ensure(self, model: str) -> str:
        index = self.index(model)
        if self._cluster.index_exists(index):
            return index
        keyword = {"type": "keyword"}
        body = {
            "settings": bodies.index_settings(self._options, knn=False),
            "mappings": {
                "dynamic": "strict",
                "_meta": {"hivemem": {"second_model": model}},
                "properties": {"id": keyword, "content_hash": keyword, "embedding": {"type": "binary"}},
            },
        }
        client = self._cluster.client
        with suppress(AlreadyExists):  # another process created it meanwhile: use theirs
            self._cluster.call(f"creating index {index}", lambda: client.indices.create(index=index, body=body))
        self._cluster.index_created(index)
        return index

    # -- reading -------------------------------------------------------------------------------

    def _hashes(self, index: str, ids: Sequence[str]) -> dict[str, str]:
        """The content hash of each of ``ids`` found in ``index`` (an alias too), by id."""
        if not ids:
            return {}
        client = self._cluster.client
        response = self._cluster.call(
            f"reading {index}",
            lambda: client.mget(index=index, body={"ids": list(ids)}, _source_includes=["content_hash"]),
        )
        return {doc["_id"]: doc["_source"]["content_hash"] for doc in response["docs"] if doc.get("found")}

    def _stored(self, model: str, ids: Sequence[str]) -> dict[str, str]:
        """The content hash each of ``ids`` has a ``model`` vector for, by id."""
        index = self.index(model)
        return self._hashes(index, ids) if self._cluster.index_exists(index) else {}

    def _page(self, look: _Look) -> list[Json]:
        """The next page of the pass under way: hits with ids, hashes and sort values."""
        if look.since_ms is None:
            query: Json = {"match_all": {}}
            sort: list[Json] = [{"id": "asc"}]
        else:
            query = {"range": {STAMP_FIELD: {"gte": look.since_ms}}}
            sort = [{STAMP_FIELD: "asc"}, {"id": "asc"}]
        body: Json = {
            "size": _PAGE,
            "query": query,
            "sort": sort,
            "_source": ["id", "content_hash"],
            "track_total_hits": False,
        }
        if look.after is not None:
            body["search_after"] = look.after
        alias = self._names.memories
        client = self._cluster.client
        response = self._cluster.call(f"reading {alias}", lambda: client.search(index=alias, body=body))
        return list(response["hits"]["hits"])

    def _every_memory(self) -> Iterator[list[tuple[str, str]]]:
        """(id, content hash) of every memory, page by page (ids and hashes only, not the documents)."""
        scan = _Look()
        while hits := self._page(scan):
            yield [(str(hit["_source"]["id"]), str(hit["_source"]["content_hash"])) for hit in hits]
            scan.after = list(hits[-1]["sort"])

    # -- the KeepsSecondVectors contract -------------------------------------------------------

    def remaining(self, model: str) -> int:
        """Memories without a current ``model`` vector (every memory read)."""
        missing = 0
        for page in self._every_memory():
            stored = self._stored(model, [memory_id for memory_id, _ in page])
            missing += sum(1 for memory_id, content in page if stored.get(memory_id) != content)
        return missing

    def rescan(self, model: str) -> None:
        """The next look reads every memory, and names again what was named and not stored."""
        self._looks.pop(model, None)

    def pending(self, model: str, limit: int) -> list[Memory]:
        """Up to ``limit`` memories without a current ``model`` vector, not named before unless changed.

        An empty answer means a pass begun in this call found nothing: what was written before the
        call is not pending.
        """
        look = self._looks.setdefault(model, _Look())
        found: list[tuple[str, str]] = []
        began_here = False
        while len(found) < limit:
            if look.after is None:  # a pass begins
                if look.since_ms is not None and time.monotonic() - look.full_at >= FULL_LOOK_S:
                    look.since_ms = None
                if look.since_ms is None:
                    look.full_at = time.monotonic()
                look.started_ms = int(time.time() * 1000)
                began_here = True
            hits = self._page(look)
            if not hits:  # the pass is over: the next reads what was stamped since it began
                look.since_ms, look.after = look.started_ms - SLACK_MS, None
                if found or began_here:
                    break
                continue
            pairs = [(str(hit["_source"]["id"]), str(hit["_source"]["content_hash"])) for hit in hits]
            stored = self._stored(model, [memory_id for memory_id, _ in pairs])
            missing = [
                (i, (memory_id, content))
                for i, (memory_id, content) in enumerate(pairs)
                if stored.get(memory_id) != content and look.named.get(memory_id) != content
            ]
            room = limit - len(found)
            taken = missing[:room]
            found += [pair for _, pair in taken]
            # Resume after the last memory looked at: all of the page, unless the batch filled up.
            last = taken[-1][0] if len(missing) > room else len(hits) - 1
            look.after = list(hits[last]["sort"])
        memories = self._read([memory_id for memory_id, _ in found]) if found else []
        for memory in memories:
            look.named[memory.id] = memory.content_hash
        return memories

    def put(self, model: str, dimension: int, vectors: Sequence[tuple[Memory, Sequence[float]]]) -> None:
        """Keep each memory's vector for the content it was made from, unless the memory is gone."""
        units = [(memory, checked_unit(vector, dimension, f"memory {memory.id}")) for memory, vector in vectors]
        if not units:
            return
        index = self._ensure(model)
        live = self._hashes(self._names.memories, [memory.id for memory, _ in units])
        lines: list[Json] = []
        for memory, vector_unit in units:
            if memory.id not in live:
                continue  # deleted since it was read: nothing to keep
            lines += [
                {"index": {"_index": index, "_id": memory.id}},
                {"id": memory.id, "content_hash": memory.content_hash, "embedding": _encode(vector_unit)},
            ]
        if lines:
            self._cluster.bulk(lines, refresh="false")
        look = self._looks.get(model)
        if look is not None:
            for memory, _ in units:
                if look.named.get(memory.id) == memory.content_hash:
                    del look.named[memory.id]

    def keep_only(self, model: str) -> int:
        """Delete every other second model's index; how many vectors they held."""
        keep = self.index(model)
        others = [index for index in self.indices() if index != keep]
        if not others:
            return 0
        client = self._cluster.client
        joined = ",".join(others)
        self._cluster.call("refreshing the second models' indices", lambda: client.indices.refresh(index=joined))
        held = int(self._cluster.call("counting second vectors", lambda: client.count(index=joined))["count"])
        self._cluster.call("deleting the second models' indices", lambda: client.indices.delete(index=joined))
        self._cluster.indices_deleted(others)
        for other in list(self._looks):
            if self.index(other) != keep:
                del self._looks[other]
        return held

    def scores(self, model: str, vector: Sequence[float], memory_ids: Sequence[str]) -> list[Candidate]:
        """The cosine of ``vector`` with each memory's current ``model`` vector, best first (ties by id)."""
        index = self.index(model)
        unique = list(dict.fromkeys(memory_ids))
        if not unique or not self._cluster.index_exists(index):
            return []
        query = unit(vector)
        alias = self._names.memories
        docs = [{"_index": index, "_id": i, "_source": ["content_hash", "embedding"]} for i in unique]
        docs += [{"_index": alias, "_id": i, "_source": ["content_hash"]} for i in unique]
        client = self._cluster.client
        response = self._cluster.call("reading second vectors", lambda: client.mget(body={"docs": docs}))
        found = [doc for doc in response["docs"] if doc.get("found")]
        live = {doc["_id"]: doc["_source"]["content_hash"] for doc in found if doc["_index"] != index}
        ids: list[str] = []
        rows: list[np.ndarray] = []
        for doc in found:
            source = doc["_source"]
            if doc["_index"] != index or live.get(doc["_id"]) != source["content_hash"]:
                continue
            row = np.frombuffer(base64.b64decode(source["embedding"]), dtype=np.float32)
            if row.size == query.size:  # another size: not this query's model
                ids.append(str(doc["_id"]))
                rows.append(row)
        return ranked_cosines(query, ids, np.vstack(rows) if rows else np.empty((0, query.size)))

    def forget(self, memory_id: str) -> None:
        """Delete ``memory_id``'s vectors of every second model (by id: realtime, no refresh needed)."""
        lines = [{"delete": {"_index": index, "_id": memory_id}} for index in self.indices()]
        if lines:
            self._cluster.bulk(lines, refresh="false")
