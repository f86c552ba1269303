"""Indexing documents: guard, parse, chunk, embed, write, one document at a time, batched for the model.

The same functions serve every shape: the CLI and the embedded server call them in-process, and
the workers' ``ingest`` task calls them for one document per job. Each document ends in one of
three outcomes: ``indexed`` (its chunks replaced as a set), ``unchanged`` (same content hash as
indexed: nothing is done), or ``failed`` (the reason is recorded on the source, and chunks indexed
earlier stay). Embedding is batched across documents: chunks of several small documents fill one
call to the embedder, so a folder of notes costs what one long document of the same text costs.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Literal

from hivemem.chunking import chunk_document
from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.errors import DocumentAccessDenied, DocumentError, DocumentNotFoundError
from hivemem.knowledge import Document, DocumentFormat, KnowledgeChunk, KnowledgeSource, ParsedDocument, chunk_id
from hivemem.model import utcnow
from hivemem.secret_scan import find_secrets, redact
from search.base import Store
from workers.documents import GuardLimits, format_of, parse_document
from workers.documents.checkouts import indexed_name
from workers.documents.knowledge_tuning import KnowledgeTuning
from workers.spans import step

__all__ = [
    "EMBED_BATCH_CHUNKS",
    "IndexOutcome",
    "PhaseTimes",
    "embedded_documents",
    "guard_limits",
    "index_documents",
    "text_document",
    "without_secrets",
]

EMBED_BATCH_CHUNKS = 256
"""Chunks gathered before one embedder call (and one store write): a few model batches, so pieces
sort well by length."""


class PhaseTimes:
    """Seconds spent per phase of indexing (read, parse, chunk, embed, write): where an ingest's time went."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(("read", "parse", "chunk", "embed", "write"), 0.0)
        self._lapped = dict(self.seconds)

    def lap(self) -> dict[str, float]:
        """The seconds per phase since the previous lap (or the start)."""
        taken = {name: total - self._lapped[name] for name, total in self.seconds.items()}
        self._lapped = dict(self.seconds)
        return taken

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - began


@dataclass(frozen=True, slots=True)
class IndexOutcome:
    """What became of one document."""

    uri: str
    status: Literal["indexed", "unchanged", "failed"]
    chunks: int = 0
    title: str = ""
    error: str | None = None
    position: int = 0  # which of the documents given (outcomes come in order of completion)
    redacted: int = 0  # credentials replaced by [REDACTED:kind] in its chunks


def guard_limits(settings: Settings) -> GuardLimits:
    """The document guards' limits as configured."""
    return GuardLimits(
        max_bytes=settings.knowledge_max_document_bytes,
        max_inflated_bytes=KnowledgeTuning().knowledge_max_inflated_bytes,
    )


@dataclass(slots=True)
class _Prepared:
    source: KnowledgeSource
    chunks: list[KnowledgeChunk]
    position: int
    redacted: int = 0


def without_secrets(chunks: list[KnowledgeChunk]) -> tuple[list[KnowledgeChunk], int]:
    """The chunks with every credential replaced by ``[REDACTED:kind]``, and how many were. A
    document is redacted, never refused: what it says besides is worth finding. Scanned a chunk at a
    time, so the work is bounded by the chunk cap; a private key block cut by a chunk boundary is
    caught by its header in one chunk and by its end line in the next."""
    clean, count = [], 0
    titles: dict[str, str] = {}  # every chunk of a document carries its title: scanned once
    for chunk in chunks:
        if chunk.title not in titles:
            titles[chunk.title] = redact(chunk.title, find_secrets(chunk.title))
        in_text = find_secrets(chunk.text)
        title = titles[chunk.title]
        if in_text or title != chunk.title:
            chunk = replace(chunk, text=redact(chunk.text, in_text), title=title)
            count += len(in_text)
        clean.append(chunk)
    return clean, count


def _source(
    scope: str, document: Document, fmt: DocumentFormat, digest: str, title: str, chunks: int
) -> KnowledgeSource:
    now = utcnow()
    return KnowledgeSource(
        scope=scope,
        uri=document.uri,
        title=title,
        format=fmt,
        content_hash=digest,
        size=len(document.data),
        fetched_at=now,
        indexed_at=now,
        chunk_count=chunks,
    )


def _chunks(scope: str, uri: str, digest: str, parsed: ParsedDocument, settings: Settings) -> list[KnowledgeChunk]:
    tuning = KnowledgeTuning()
    spans = chunk_document(parsed, tuning.knowledge_chunk_chars, tuning.knowledge_chunk_overlap)
    return [
        KnowledgeChunk(
            id=chunk_id(scope, uri, digest, ordinal),
            scope=scope,
            uri=uri,
            ordinal=ordinal,
            text=span.text,
            title=parsed.title,
            section=span.section,
            page=span.page,
            start=span.start,
            end=span.end,
        )
        for ordinal, span in enumerate(spans)
    ]


def _prepare(
    store: Store, scope: str, document: Document, settings: Settings, force: bool, position: int, times: PhaseTimes
) -> _Prepared | IndexOutcome:
    """Parse and chunk one document, or say why not (unchanged, or failed and recorded)."""
    digest = hashlib.sha256(document.data).hexdigest()
    held = store.get_source(scope, document.uri)
    if not force and held is not None and held.content_hash == digest and held.last_error is None:
        return IndexOutcome(document.uri, "unchanged", held.chunk_count, held.title, position=position)
    fmt = document.format
    try:
        fmt = fmt or format_of(document.name, document.content_type)
        with times.phase("parse"):
            parsed = parse_document(document.data, document.name, fmt, guard_limits(settings))
    except DocumentError as exc:
        fmt = fmt or DocumentFormat.TEXT
        store.record_source_error(_failure(scope, document.uri, fmt, digest, len(document.data), exc.reason))
        return IndexOutcome(document.uri, "failed", error=exc.reason, position=position)
    with times.phase("chunk"):
        chunks = _chunks(scope, document.uri, digest, parsed, settings)
    if len(chunks) > settings.knowledge_max_chunks:
        reason = (
            f"refused: it makes {len(chunks):,} chunks, over the limit of {settings.knowledge_max_chunks:,} a "
            "document (HIVEMEM_KNOWLEDGE_MAX_CHUNKS); split it, or raise the limit"
        )
        store.record_source_error(_failure(scope, document.uri, fmt, digest, len(document.data), reason))
        return IndexOutcome(document.uri, "failed", error=reason, position=position)
    with times.phase("chunk"):
        chunks, redacted = without_secrets(chunks)
    title = chunks[0].title if chunks else parsed.title
    return _Prepared(_source(scope, document, fmt, digest, title, len(chunks)), chunks, position, redacted)


def _failure(scope: str, uri: str, fmt: DocumentFormat, digest: str, size: int, reason: str) -> KnowledgeSource:
    """The source record of a failed attempt: no chunks, never indexed, and the reason."""
    return KnowledgeSource(
        scope=scope,
        uri=uri,
        title="",
        format=fmt,
        content_hash=digest,
        size=size,
        fetched_at=utcnow(),
        indexed_at=None,
        chunk_count=0,
        last_error=reason,
    )


def _record_failure(store: Store, scope: str, exc: DocumentError) -> None:
    """Record a document that could not even be read (too large, a URL that failed) on its source."""
    try:
        fmt = format_of(exc.source)
    except DocumentError:
        fmt = DocumentFormat.TEXT
    store.record_source_error(_failure(scope, indexed_name(exc.source, scope), fmt, "", 0, exc.reason))


def embedded_documents(
    embedder: Embedder, documents: Sequence[tuple[KnowledgeSource, Sequence[KnowledgeChunk]]]
) -> list[tuple[KnowledgeSource, list[KnowledgeChunk]]]:
    """The documents with every chunk embedded, in one embedder call for them all (it cuts the
    texts into its model batches): what :meth:`search.base.KnowledgeStore.replace_sources` takes."""
    texts = [chunk.context for _, chunks in documents for chunk in chunks]
    vectors = iter(embedder.embed_documents(texts) if texts else [])
    return [
        (source, [replace(chunk, embedding=tuple(next(vectors))) for chunk in chunks]) for source, chunks in documents
    ]


def _write(store: Store, embedder: Embedder, batch: list[_Prepared], times: PhaseTimes) -> Iterator[IndexOutcome]:
    chunk_count = sum(len(prepared.chunks) for prepared in batch)
    with times.phase("embed"), step("embed", texts=chunk_count, model=embedder.model_id):
        documents = embedded_documents(embedder, [(prepared.source, prepared.chunks) for prepared in batch])
    # The batch in one store write: on OpenSearch a few bulk requests and one refresh, not three
    # refreshes a document.
    with times.phase("write"), step("store.write", chunks=chunk_count, store=type(store).__name__):
        store.replace_sources(documents)
    for prepared, (_, chunks) in zip(batch, documents, strict=True):
        yield IndexOutcome(
            prepared.source.uri,
            "indexed",
            len(chunks),
            prepared.source.title,
            position=prepared.position,
            redacted=prepared.redacted,
        )


def index_documents(
    store: Store,
    embedder: Embedder,
    scope: str,
    documents: Iterable[Document | Callable[[], Document]],
    settings: Settings,
    *,
    force: bool = False,
    times: PhaseTimes | None = None,
) -> Iterator[IndexOutcome]:
    """Index each document into ``scope``; yields one outcome per document, in order of completion.

    A document may be given as a function that reads it: a read that fails with ``DocumentError``
    (a missing file, a refused URL) is that document's failure, not the run's. ``force`` indexes
    unchanged documents again. ``times`` adds up the seconds of each phase. A file of a checkout of
    ``scope``'s project is indexed as ``repo:PATH`` (:mod:`workers.documents.checkouts`).
    """
    times = times or PhaseTimes()
    pending: list[_Prepared] = []
    waiting = 0
    for position, item in enumerate(documents):
        try:
            with times.phase("read"):
                document = item() if callable(item) else item
        except (DocumentNotFoundError, DocumentAccessDenied) as exc:
            # Nothing there, or not the caller's to read: reported, not recorded as a source.
            yield IndexOutcome(exc.source, "failed", error=exc.reason, position=position)
            continue
        except DocumentError as exc:
            _record_failure(store, scope, exc)
            yield IndexOutcome(exc.source, "failed", error=exc.reason, position=position)
            continue
        # A file of the scope's own checkout is named by its path there, the same on every machine.
        document = replace(document, uri=indexed_name(document.uri, scope))
        prepared = _prepare(store, scope, document, settings, force, position, times)
        if isinstance(prepared, IndexOutcome):
            yield prepared
            continue
        pending.append(prepared)
        waiting += len(prepared.chunks)
        if waiting >= EMBED_BATCH_CHUNKS:
            yield from _write(store, embedder, pending, times)
            pending, waiting = [], 0
    if pending:
        yield from _write(store, embedder, pending, times)


def text_document(uri: str, title: str, text: str) -> Document:
    """Raw text (``knowledge store``) as a document: read as Markdown, so headings in it become sections."""
    data = (f"# {title}\n\n{text}" if title else text).encode()
    return Document(uri=uri, name=f"{uri}.md", data=data, format=DocumentFormat.MARKDOWN)
