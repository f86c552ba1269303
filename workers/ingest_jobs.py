"""Ingest jobs: documents as job items, the same function for the in-process pool and the Celery task.

A bulk ingest is one job whose items are its documents (``GET /v1/jobs/{id}`` counts them as they
finish). Each item names its scope, its source (a file path or URL) and which folders the caller
could read: the gateway checked them, and the worker that reads the file checks them again, so a
queued item is no wider than the request that made it. Outcomes are recorded per document, so a
redelivered task redoes only the documents without one, and an unchanged document costs a hash.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from hivemem.config import Settings
from hivemem.embedding import Embedder, release_work_memory
from search.base import Store
from workers.documents.sources import FileAccess, read_source
from workers.job_board import ItemOutcome, JobItem, item_key
from workers.knowledge_jobs import IndexOutcome, PhaseTimes, index_documents

__all__ = ["document_item", "outcome_record", "run_document_items"]


def document_item(job_id: str, index: int, scope: str, source: str, access: FileAccess, *, force: bool) -> JobItem:
    """The job item of one document."""
    allowed = None if access.allowed is None else [str(folder) for folder in access.allowed]
    return {
        "job_id": job_id,
        "index": index,
        "document": {"scope": scope, "source": source, "allowed": allowed, "force": force},
    }


def outcome_record(item: JobItem, outcome: IndexOutcome, seconds: dict[str, float]) -> ItemOutcome:
    """What the job board keeps of one document's outcome, with the seconds per phase it took."""
    record: ItemOutcome = {
        "index": item["index"],
        "id": item_key(item),
        "outcome": outcome.status,
        "seconds": {phase: round(value, 4) for phase, value in seconds.items()},
    }
    if outcome.status == "indexed":
        record["chunks"] = outcome.chunks
    if outcome.redacted:
        record["redacted"] = outcome.redacted
    if outcome.error:
        record["error"] = outcome.error
    return record


def run_document_items(
    store: Store, embedder: Embedder, settings: Settings, items: Sequence[JobItem]
) -> Iterator[tuple[JobItem, IndexOutcome, dict[str, float]]]:
    """Index each item's document; yields each item with its outcome, in order of completion, and the
    seconds per phase spent since the previous outcome. Documents are embedded in batches, so one
    outcome may carry the embedding of several: the sum over a job's items is its time per phase.
    """
    times = PhaseTimes()
    by_scope: dict[tuple[str, bool], list[JobItem]] = {}
    for item in items:
        document = item["document"]
        by_scope.setdefault((str(document["scope"]), bool(document["force"])), []).append(item)
    for (scope, force), group in by_scope.items():

        def reader(item: JobItem):  # type: ignore[no-untyped-def]
            allowed = item["document"]["allowed"]
            access = FileAccess(None if allowed is None else tuple(Path(folder) for folder in allowed))
            source, named_in = str(item["document"]["source"]), str(item["document"]["scope"])
            return lambda: read_source(access.located(source, named_in), access, settings)

        documents = [reader(i) for i in group]
        for outcome in index_documents(store, embedder, scope, documents, settings, force=force, times=times):
            yield group[outcome.position], outcome, times.lap()
    # Documents' long batches grew the model's working memory, which no query needs.
    release_work_memory(embedder)
