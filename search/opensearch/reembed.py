"""Re-embedding an OpenSearch store: the new model's vectors go into new indices beside the live
ones, then one ``_aliases`` request moves the memories and chunks aliases onto them.

**Staging.** For the target model, one memories and one chunks index (``<alias>-reembed-<model>``),
made from the store's own templates with the new model and dimension. A staged memory is the live
document with the new vector; its ``content_hash`` tells whether the live memory changed since (it is
then pending again). A chunk's id names its content, so a staged chunk is current while it exists.
Staged vectors survive a restart: a later run goes on from them.

**Pending.** The live indices are read in id order from a cursor kept between calls, each page
checked against the staging index with one ``_mget``. "Nothing pending" is only said after a whole
pass from the start found nothing, so what was written during an earlier pass is found by the next.

**Swap** (the caller holds the store's writes back meanwhile, :meth:`Reembedder.swap`): a last pass
must find nothing pending; the fields that changed on live memories without new content (access
counts, importance, state, validity) are copied onto their staged documents; what was deleted from
the live indices is deleted from staging; then the aliases move, and the old indices are deleted.
Processes other than this one that write to the store (Celery workers) are not held back: stop them
for the re-embed and start them again on the new model (until the swap, a process configured with
the new model refuses to open the store, so it cannot write old vectors into the new indices).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from hivemem.knowledge import KnowledgeChunk
from hivemem.model import Memory
from search.capabilities import ReembedBatch
from search.opensearch import bodies
from search.opensearch.bodies import IndexNames, IndexOptions, model_slug
from search.opensearch.cluster import Cluster
from search.opensearch.docs import memory_doc, memory_from_doc
from search.opensearch.knowledge import chunk_from_doc
from search.opensearch.setup import templates

__all__ = ["Reembedder"]

Json = dict[str, Any]

_PAGE = 500
_KINDS = ("memories", "chunks")


@dataclass(slots=True)
class _Pass:
    """Where the pending scan of one model stands: which index, after which id, and whether this
    pass (begun at the start of the memories) has found anything yet."""

    kind: str = "memories"
    after: str | None = None
    found: bool = False


class Reembedder:
    """The staging, pending scan and swap of one OpenSearch store (see the module docstring)."""

    def __init__(self, cluster: Cluster, names: IndexNames, options: IndexOptions) -> None:
        self._cluster = cluster
        self._names = names
        self._options = options
        self._passes: dict[str, _Pass] = {}

    # -- names ---------------------------------------------------------------------------------

    def _alias(self, kind: str) -> str:
        return self._names.memories if kind == "memories" else self._names.chunks

    def staging(self, kind: str, model: str) -> str:
        """The staging index of ``kind`` (memories or chunks) for ``model``."""
        return f"{self._alias(kind)}-reembed-{model_slug(model)}"

    def live(self, kind: str) -> list[str]:
        """The indices behind the alias of ``kind`` now."""
        alias = self._alias(kind)
        found = self._cluster.call(f"reading alias {alias}", lambda: self._cluster.client.indices.get_alias(name=alias))
        return sorted(found)

    def _ensure_staging(self, model: str, dimension: int) -> None:
        built = templates(self._names, self._options, embedding_model=model, dimension=dimension)
        indices = self._cluster.client.indices
        for kind in _KINDS:
            name = self.staging(kind, model)
            if self._cluster.index_exists(name):
                continue
            body = dict(built[self._alias(kind)]["template"])
            self._cluster.call(f"creating index {name}", partial(indices.create, index=name, body=body))
            self._cluster.index_created(name)

    # -- reading the live indices --------------------------------------------------------------

    def _page(self, kind: str, after: str | None, index: str | None = None) -> list[Json]:
        """Up to a page of documents of ``kind`` (of ``index``, default the live alias) with ids after
        ``after``, in id order, without their vectors."""
        body: Json = {
            "size": _PAGE,
            "query": {"match_all": {}},
            "sort": [{"id": "asc"}],
            "_source": {"excludes": [bodies.VECTOR_FIELD]},
            "track_total_hits": False,
        }
        if after is not None:
            body["search_after"] = [after]
        target = index or self._alias(kind)
        response = self._cluster.call(f"reading {target}", lambda: self._cluster.client.search(index=target, body=body))
        return [hit["_source"] for hit in response["hits"]["hits"]]

    def _all(self, kind: str, index: str | None = None) -> Iterator[list[Json]]:
        """Every document of ``kind`` (of ``index``, default the live alias), page by page."""
        after: str | None = None
        while page := self._page(kind, after, index):
            yield page
            if len(page) < _PAGE:
                return
            after = str(page[-1]["id"])

    def _staged(self, index: str, ids: Sequence[str]) -> dict[str, Json]:
        """The documents of ``ids`` found in ``index`` (without vectors), by id; none when there is no such index."""
        if not ids or not self._cluster.index_exists(index):
            return {}
        client = self._cluster.client
        response = self._cluster.call(
            f"reading {index}",
            lambda: client.mget(index=index, body={"ids": list(ids)}, _source_excludes=[bodies.VECTOR_FIELD]),
        )
        return {doc["_id"]: doc["_source"] for doc in response["docs"] if doc.get("found")}

    @staticmethod
    def _current(kind: str, live: Json, staged: Json | None) -> bool:
        """Whether ``staged`` holds a vector of ``live`` as it reads now: a chunk's id names its
        content; a memory's content may change under the same id."""
        if staged is None:
            return False
        return kind == "chunks" or staged.get("content_hash") == live.get("content_hash")

    def _unstaged(self, kind: str, model: str, page: Sequence[Json]) -> list[Json]:
        """The documents of ``page`` with no current staged vector for ``model``."""
        staged = self._staged(self.staging(kind, model), [str(doc["id"]) for doc in page])
        return [doc for doc in page if not self._current(kind, doc, staged.get(str(doc["id"])))]

    # -- the ReEmbeds contract -----------------------------------------------------------------

    def remaining(self, model: str) -> int:
        """Memories and chunks without a current staged vector for ``model`` (one whole pass)."""
        return sum(len(self._unstaged(kind, model, page)) for kind in _KINDS for page in self._all(kind))

    def pending(self, model: str, limit: int) -> ReembedBatch:
        """Up to ``limit`` memories, then chunks, without a current staged vector for ``model``."""
        scan = self._passes.setdefault(model, _Pass())
        found: list[Json] = []
        kinds: list[str] = []
        while len(found) < limit:
            page = self._page(scan.kind, scan.after)
            if not page:
                if scan.kind == "memories":
                    scan.kind, scan.after = "chunks", None
                    continue
                # The end of a pass, which began at the start: when it found nothing, nothing is
                # pending; when it found something earlier (staged since), go round once more.
                clean = not scan.found
                self._passes[model] = scan = _Pass()
                if found or clean:
                    break
                continue
            missing = self._unstaged(scan.kind, model, page)
            room = limit - len(found)
            taken = missing[:room]
            found += taken
            kinds += [scan.kind] * len(taken)
            scan.found = scan.found or bool(taken)
            # Resume after the last document looked at (all of the page, unless the batch filled up).
            scan.after = str((taken[-1] if len(missing) > room else page[-1])["id"])
        memories = [memory_from_doc(doc) for doc, kind in zip(found, kinds, strict=True) if kind == "memories"]
        chunks = [
            chunk_from_doc(doc, with_embedding=False)
            for doc, kind in zip(found, kinds, strict=True)
            if kind == "chunks"
        ]
        return ReembedBatch(memories, chunks)

    def stage(
        self,
        model: str,
        dimension: int,
        memories: Sequence[tuple[Memory, Sequence[float]]],
        chunks: Sequence[tuple[KnowledgeChunk, Sequence[float]]],
    ) -> None:
        """Write the staged documents: each memory with its new vector, each chunk's live document with its new one."""
        self._ensure_staging(model, dimension)
        lines: list[Json] = []
        index = self.staging("memories", model)
        for memory, vector in memories:
            staged = replace(memory, embedding=list(vector), embedding_model=model)
            lines += [{"index": {"_index": index, "_id": memory.id}}, memory_doc(staged, dimension)]
        if chunks:
            live = self._live_docs("chunks", [chunk.id for chunk, _ in chunks])
            index = self.staging("chunks", model)
            for chunk, vector in chunks:
                doc = live.get(chunk.id)
                if doc is None:
                    continue  # deleted since it was read: nothing to stage
                lines += [{"index": {"_index": index, "_id": chunk.id}}, doc | {bodies.VECTOR_FIELD: list(vector)}]
        if lines:
            self._cluster.bulk(lines, refresh="false")

    def _live_docs(self, kind: str, ids: Sequence[str]) -> dict[str, Json]:
        return self._staged(self._alias(kind), ids)

    def swap(self, model: str, dimension: int) -> bool:
        """Make the staged indices the live ones; False (nothing changed) while anything is pending.
        The caller must hold this process's writes back until it returns."""
        self._ensure_staging(model, dimension)
        client = self._cluster.client
        for kind in _KINDS:
            for index in (self._alias(kind), self.staging(kind, model)):
                self._cluster.call(f"refreshing {index}", partial(client.indices.refresh, index=index))
        for kind in _KINDS:
            if not self._synced(kind, model):
                self._passes.pop(model, None)
                return False
        for kind in _KINDS:
            self._drop_deleted(kind, model)
        old = {kind: self.live(kind) for kind in _KINDS}
        actions: list[Json] = []
        for kind in _KINDS:
            alias = self._alias(kind)
            actions += [{"remove": {"index": index, "alias": alias}} for index in old[kind]]
            actions.append({"add": {"index": self.staging(kind, model), "alias": alias, "is_write_index": True}})
        self._cluster.call("moving the aliases", lambda: client.indices.update_aliases(body={"actions": actions}))
        stale = [index for kind in _KINDS for index in old[kind] if index != self.staging(kind, model)]
        if stale:
            self._cluster.call("deleting the old indices", lambda: client.indices.delete(index=",".join(stale)))
            self._cluster.indices_deleted(stale)
        self._passes.pop(model, None)
        return True

    def _synced(self, kind: str, model: str) -> bool:
        """Whether every live document of ``kind`` has a current staged one; copies onto staged
        memories the fields that changed without new content. False at the first one pending."""
        index = self.staging(kind, model)
        for page in self._all(kind):
            staged = self._staged(index, [str(doc["id"]) for doc in page])
            updates: list[Json] = []
            for doc in page:
                mine = staged.get(str(doc["id"]))
                if mine is None or not self._current(kind, doc, mine):
                    return False
                if kind == "memories":
                    changed = {k: v for k, v in doc.items() if k != "embedding_model" and mine.get(k) != v}
                    # A field the live document no longer has (an optional one cleared) is cleared too.
                    changed |= {k: None for k in mine if k not in doc and k != "embedding_model"}
                    if changed:
                        updates += [{"update": {"_index": index, "_id": doc["id"]}}, {"doc": changed}]
            if updates:
                self._cluster.bulk(updates, refresh="false")
        return True

    def _drop_deleted(self, kind: str, model: str) -> None:
        """Delete from staging what is no longer live."""
        index = self.staging(kind, model)
        for page in self._all(kind, index):
            ids = [str(doc["id"]) for doc in page]
            live = self._live_docs(kind, ids)
            gone = [doc_id for doc_id in ids if doc_id not in live]
            if gone:
                self._cluster.bulk([{"delete": {"_index": index, "_id": doc_id}} for doc_id in gone], refresh="true")
