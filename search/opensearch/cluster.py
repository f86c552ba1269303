"""One ``opensearchpy`` client behind the store's error boundary, shared by its reads and writes.

Every request goes through :meth:`Cluster.call`, which refuses a closed store and translates
driver errors (:func:`search.opensearch.errors.translate_errors`); the helpers here are the
request shapes more than one part of the store needs: a checked ``_bulk``, a realtime GET that
reads a missing document as None, and a paged scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from hivemem.errors import StoreError, StoreUnavailableError
from search.opensearch.client import ClusterTarget
from search.opensearch.errors import DocumentMissing, translate_errors

__all__ = ["Cluster"]

Json = dict[str, Any]

_PAGE = 1000


class Cluster:
    """The client of one store, the cluster it talks to, and whether the store is closed."""

    def __init__(self, client: Any, target: ClusterTarget) -> None:
        self.client = client
        self.target = target
        self.closed = False
        # Indices seen to exist (asked once, not before every read); those this store deletes leave it.
        self._existing: set[str] = set()

    def call(self, action: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` with the driver's errors translated; ``StoreUnavailableError`` once closed."""
        if self.closed:
            raise StoreUnavailableError("the store is closed")
        with translate_errors(self.target.display, action):
            return fn()

    def bulk(self, lines: list[Json], refresh: str) -> list[Json]:
        """One ``_bulk``; returns each item's result. Version conflicts (409) are left to the caller."""
        response = self.call("bulk write", lambda: self.client.bulk(body=lines, refresh=refresh))
        items = [next(iter(item.values())) for item in response["items"]]
        for item in items:
            status = int(item.get("status", 200))
            if status >= 300 and status not in (404, 409):
                error = item.get("error", {})
                raise StoreError(f"OpenSearch bulk item {item.get('_id')} failed ({status}): {error}")
        return items

    def index_exists(self, index: str) -> bool:
        """Whether ``index`` exists; asked of the cluster until it does, then remembered."""
        if index not in self._existing:
            indices = self.client.indices
            if self.call(f"checking index {index}", lambda: indices.exists(index=index)):
                self._existing.add(index)
        return index in self._existing

    def index_created(self, index: str) -> None:
        """Remember that ``index`` exists (this store just created it, or found it created)."""
        self._existing.add(index)

    def indices_deleted(self, indices: Iterable[str]) -> None:
        """Forget indices this store deleted: the next :meth:`index_exists` asks again."""
        self._existing.difference_update(indices)

    def get_doc(self, alias: str, doc_id: str) -> Json | None:
        """The realtime GET of one document; None when the document (not the index) is missing."""
        try:
            return dict(self.call(f"reading {alias}/{doc_id}", lambda: self.client.get(index=alias, id=doc_id)))
        except DocumentMissing:
            return None

    def scan(self, alias: str, query: Json, sort: list[Any], *, excludes: Sequence[str] = ()) -> Iterator[Json]:
        """Every matching ``_source`` (less the ``excludes`` fields), in ``sort`` order, page by page
        (``search_after``)."""
        after: list[Any] | None = None
        while True:
            body: Json = {"size": _PAGE, "query": query, "sort": sort, "track_total_hits": False}
            if excludes:
                body["_source"] = {"excludes": list(excludes)}
            if after is not None:
                body["search_after"] = after
            response = self.call(f"searching {alias}", partial(self.client.search, index=alias, body=body))
            hits = response["hits"]["hits"]
            for hit in hits:
                yield hit["_source"]
            if len(hits) < _PAGE:
                return
            after = hits[-1]["sort"]

    def close(self) -> None:
        """Close the client. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.client.close()
