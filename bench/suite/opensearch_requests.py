"""The requests each batch path sends to an OpenSearch store: ``hivemem bench opensearch-requests``.

Against a real cluster (``--url``) or a private osmem-server (the ``dev`` extra's in-memory server
with OpenSearch's API, started on a free port when no URL is given). Every HTTP request the store's
client sends is counted, and among them the writes that wait for a refresh (``refresh=wait_for`` or
``true``, and ``_refresh`` requests): on a cluster each of those waits up to the index's refresh
interval (1 s by default) or forces a segment of its own, so they, more than the requests, are what
a path costs there. The memories and documents are embedded with the hash embedder (64
dimensions): what is measured is the store's traffic, not the model. Every index the run creates
(two prefixes of its own) is deleted at the end.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar

from api.services.caller import Caller
from api.services.memories import MemoryService
from api.services.parts import Parts
from bench.suite.local_cluster import start_osmem
from bench.suite.tuned import tuned
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.knowledge_schemas import IngestRequest
from hivemem.model import Hit, Relation, RelationType, utcnow
from hivemem.schemas import LinkCreate, MemoryCreate
from search.base import SearchFilter
from search.graph import graph_neighbours
from workers.documents.sources import FileAccess
from workers.lifecycle import archive_faded

__all__ = ["run_opensearch_requests"]

T = TypeVar("T")
_SCOPE = "bench/requests"
_DOCUMENTS = 100


@contextmanager
def _server(url: str | None) -> Iterator[str]:
    """The store URL to measure: ``url``, or else a private osmem-server's on a free loopback port."""
    if url is not None:
        yield url
        return
    try:
        process, listening = start_osmem()
    except ImportError as exc:
        raise RuntimeError("osmem-server is not installed: install hivemem[dev], or name a cluster with --url") from exc
    try:
        yield listening.replace("http://", "opensearch+http://", 1)
    finally:
        process.kill()
        process.communicate()


class _Log:
    """The requests of the path being measured: each one's method, path, and whether it waited for
    a refresh."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bool]] = []

    def seen(self, method: str, path: str, waits: bool) -> None:
        self.requests.append((method, path, waits))

    def measure(self, operation: str, rows: list[dict[str, Any]], run: Callable[[], T]) -> T:
        self.requests.clear()
        began = time.perf_counter()
        result = run()
        rows.append(
            {
                "operation": operation,
                "requests": len(self.requests),
                "refresh_waits": sum(1 for *_, waited in self.requests if waited),
                "seconds": round(time.perf_counter() - began, 3),
            }
        )
        return result


def _service(url: str, prefix: str, log: _Log, settings: Settings) -> MemoryService:
    from search.opensearch import OpenSearchStore
    from search.opensearch.client import reporting_connection

    embedder = HashEmbedder(64)
    cluster = url.split("?", 1)[0].rstrip("/")  # the run's own prefix replaces any the URL names
    store = OpenSearchStore(
        f"{cluster}/?index={prefix}",
        embedding_model=embedder.model_id,
        dimension=embedder.dimension,
        settings=settings,
        connection_class=reporting_connection(log.seen),
    )
    return MemoryService(Parts(settings, store, embedder))


def _note(i: int) -> MemoryCreate:
    return MemoryCreate(
        title=f"Service {i} database",
        content=f"The service number {i} talks to database {i % 17} over port {4000 + i}.",
        scope=_SCOPE,
    )


def _write_documents(folder: str, count: int) -> None:
    """``count`` short Markdown documents of two sections each (one chunk a section)."""
    for i in range(count):
        text = (
            f"# Runbook {i}\n\n## Deploy\n\nService {i} deploys from its main branch every Tuesday.\n\n"
            f"## Rollback\n\nService {i} rolls back by redeploying the previous image tag.\n"
        )
        with open(f"{folder}/runbook-{i}.md", "w", encoding="utf-8") as handle:
            handle.write(text)


def run_opensearch_requests(settings: Settings, *, url: str | None, memories: int) -> dict[str, Any]:
    """Run each path once over ``memories`` memories (at least 101); the report, one row per path.

    ``url`` is a store URL (``opensearch+http://HOST:PORT``); None starts a private osmem-server.
    """
    log = _Log()
    config = settings
    run = uuid.uuid4().hex[:8]
    rows: list[dict[str, Any]] = []
    # Exact-hash resolution only: the writes measured are the store's, not the neighbour searches.
    with tuned(resolution_neighbours=0), _server(url) as store_url:
        source = _service(store_url, f"bench_requests_{run}_a", log, config)
        target = _service(store_url, f"bench_requests_{run}_b", log, config)
        try:
            notes = [_note(i) for i in range(memories)]
            written = log.measure(f"memorize_many ({memories})", rows, lambda: source.memorize_many(notes, Caller()))
            ids = [result.id for result in written]
            source.store.add_relations(
                [Relation(ids[i], ids[i + 1], RelationType.RELATED_TO) for i in range(0, len(ids) - 1, 10)]
            )
            links = [LinkCreate(target_id=ids[k], relationship_type="related_to") for k in (3, 4, 5)]
            linked = MemoryCreate(
                title="A note linked to three",
                content="A note of the bench that links to three others.",
                scope=_SCOPE,
                related_to=links,
            )

            def memorize_linked() -> object:
                # The edges' targets are reinforced as cited, in the background: counted here, where
                # they belong, not in whatever is measured next.
                result = source.memorize(linked, Caller())
                source.runner.drain()
                return result

            log.measure("memorize with 3 related_to", rows, memorize_linked)
            results = [Hit(memory=m, score=1.0) for m in source.store.get_many(ids[0:100:10], vectors=False)]
            where = SearchFilter(scopes=[_SCOPE])
            log.measure(
                f"graph step over {len(results)} results",
                rows,
                lambda: graph_neighbours(source.store, results, where, limit=3, hops=1),
            )
            lines = log.measure(f"export ({memories})", rows, lambda: list(source.transfer.export(Caller(), [_SCOPE])))
            log.measure(f"import ({memories})", rows, lambda: target.transfer.import_lines(lines, Caller()))
            years_later = utcnow() + timedelta(days=3650)
            archived = log.measure(
                "archive pass (every memory faded)", rows, lambda: archive_faded(source.store, _SCOPE, years_later)
            )
            with tempfile.TemporaryDirectory(prefix="hivemem-bench-requests-") as folder:
                _write_documents(folder, _DOCUMENTS)
                request = IngestRequest(paths=[folder], scope=_SCOPE)
                log.measure(
                    f"knowledge ingest ({_DOCUMENTS} documents)",
                    rows,
                    lambda: source.knowledge.ingest(request, Caller(), FileAccess()),
                )
        finally:
            for service in (source, target):
                service.store.drop()
                service.close()
    return {
        "server": "osmem-server (in memory, on this machine)" if url is None else "the cluster at --url",
        "memories": memories,
        "archived": len(archived),
        "paths": rows,
    }
