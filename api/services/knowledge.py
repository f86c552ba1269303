"""The knowledge service: what ``knowledge`` over MCP, ``/v1/knowledge`` and ``hivemem knowledge`` call.

A source is named as a file path, an http(s) URL, ``key:NAME`` (text stored with ``store``) or
``upload:NAME`` (a document uploaded over HTTP).
Who may name a file is the caller's :class:`FileAccess`: over stdio and the CLI the agent reads
its own files; over HTTP only files inside ``HIVEMEM_KNOWLEDGE_ALLOWED_PATHS`` (empty: none), so a
team server reads no file its operator did not offer. A directory is refused as a source: folders
are for ``ingest``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from api.process.memory import release_free_memory
from api.services.caller import Caller
from api.services.knowledge_paths import Expansion, checked_source, expand_paths, file_gone, prune_folder
from api.services.parts import Parts
from api.services.pattern_budget import compile_pattern
from api.services.secrets import SecretScreen
from hivemem.access import Role
from hivemem.answers import JobPublic
from hivemem.embedding import release_work_memory
from hivemem.errors import (
    DocumentError,
    SourceNotFoundError,
    ValidationError,
)
from hivemem.jobs import Job, JobKind, failure_text, new_job_id
from hivemem.knowledge import Document, KnowledgeChunk, KnowledgeSource, chunk_section_starts, sections_between
from hivemem.knowledge_schemas import (
    ChunkCitation,
    IngestAccepted,
    IngestFailure,
    IngestReport,
    IngestRequest,
    KnowledgeAccepted,
    KnowledgeDeleted,
    KnowledgeDeleteRequest,
    KnowledgeMatch,
    KnowledgeMatchRequest,
    KnowledgeMatchResponse,
    KnowledgePruned,
    KnowledgePruneRequest,
    KnowledgeReadRequest,
    KnowledgeReadResponse,
    KnowledgeSearchRequest,
    KnowledgeSearchResponse,
    KnowledgeStored,
    KnowledgeStoreRequest,
    ReadSection,
    SourcePage,
    SourcePublic,
)
from hivemem.model import utcnow
from search.base import ChunkFilter
from search.knowledge_recall import KnowledgeSearcher
from search.recall import RecallParams
from workers.documents import format_of, parse_document
from workers.documents.checkouts import indexed_name, is_checkout_name
from workers.documents.knowledge_tuning import KnowledgeTuning
from workers.documents.sources import STORED_PREFIXES, FileAccess, is_url, key_uri, read_source
from workers.ingest_jobs import document_item, outcome_record
from workers.knowledge_jobs import IndexOutcome, PhaseTimes, guard_limits, index_documents, text_document

__all__ = ["STORED", "FileAccess", "KnowledgeService"]

log = logging.getLogger(__name__)

# What became of a searched `source` that was not indexed now: its indexed copy was searched.
STORED = "stored"

_CONTEXT_CHARS = 80


# A document stored or uploaded with at most this many bytes is indexed within its request (201);
# a larger one as a background job (202 with the job), so no request holds a connection and a
# server thread for the minutes a large document's embedding takes (64 KiB of prose: about 55
# chunks, a few seconds on 2 cores).
INDEX_IN_REQUEST_MAX_BYTES = 64 * 1024


class KnowledgeService:
    """search / read / match / store / delete / ingest / sources over one store and one embedder."""

    def __init__(self, parts: Parts, *, tuning: KnowledgeTuning | None = None) -> None:
        """The service over ``parts``' store, embedder and runner; its searches pass the gates its
        recalls pass, and it closes with them (:class:`api.services.parts.Parts`)."""
        self.settings, self.store, self.embedder = parts.settings, parts.store, parts.embedder
        self.runner = parts.runner
        self.tuning = tuning or KnowledgeTuning()
        self.searcher = KnowledgeSearcher(self.store, self.embedder, RecallParams(), gate=parts.search_gate)
        self.model_gate = parts.model_gate
        # Large uploads and stored texts, one at a time in the background (see INDEX_IN_REQUEST_MAX_BYTES).
        self._later = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hivemem-upload")
        parts.on_close(self.close)

    def close(self) -> None:
        """Finish the documents being indexed in the background."""
        self._later.shutdown(wait=True)

    # -- reading sources -------------------------------------------------------------------------

    def _document(self, source: str, access: FileAccess, scope: str) -> Document:
        return read_source(access.located(source, scope), access, self.settings)

    def _uri(self, source: str, access: FileAccess, scope: str) -> str:
        """The name ``source`` is indexed under in ``scope``, once checked as this caller's to read."""
        if _named_already(source):
            return source
        return indexed_name(str(access.resolve(source)), scope)

    def _indexed_uri(self, source: str, caller: Caller, requested: str | None, access: FileAccess) -> str:
        """The uri of ``source`` among the indexed documents: a file's name in the scope, or, for a
        file this caller cannot read now (not allowed, gone) that one of its scopes holds indexed,
        the name it is held under."""
        try:
            return self._uri(source, access, _naming_scope(caller, requested))
        except DocumentError:  # not readable now (refused, gone, unreachable): the indexed copy, if any
            held = self._holding(source, caller, requested)
            if held is None:
                raise
            return held.uri

    def _fresh(self, scope: str, source: str, access: FileAccess) -> IndexOutcome | None:
        """Index ``source`` into ``scope`` when it is new or changed (a URL: when older than the max age)."""
        if source.startswith(STORED_PREFIXES):
            return None
        if is_url(source):
            held = self.store.get_source(scope, source)
            max_age = timedelta(seconds=self.tuning.knowledge_url_max_age_s)
            if held is not None and held.last_error is None and utcnow() - held.fetched_at < max_age:
                return None
        # Read first: a file that is missing or not this caller's is that error (404, 403), not an index failure.
        document = self._document(source, access, scope)
        with self.model_gate.reading():  # embedded and written with one model (a re-embed swaps between)
            return next(iter(index_documents(self.store, self.embedder, scope, [document], self.settings)))

    # -- commands ------------------------------------------------------------------------------

    def search(self, request: KnowledgeSearchRequest, caller: Caller, access: FileAccess) -> KnowledgeSearchResponse:
        """Chunks of the scope set (scope + global) for the query; with ``source``, of that document only."""
        scopes = caller.readable(request.scope)
        uri, indexed = (
            (None, None) if request.source is None else self._searched(request.source, caller, request.scope, access)
        )
        with self.model_gate.reading():  # the query's model and the chunks' stay the same (a re-embed)
            hits = self.searcher.search(request.query, ChunkFilter(scopes=scopes, uri=uri), request.limit)
        return KnowledgeSearchResponse(results=[_citation(h.chunk, h.score) for h in hits], indexed=indexed)

    def _searched(
        self, source: str, caller: Caller, requested: str | None, access: FileAccess
    ) -> tuple[str, str | None]:
        """The uri a search naming ``source`` reads, and what became of the source.

        It is indexed first when new or changed, where this caller may write and read the document. A
        caller that may not (a reader of a team scope; over HTTP, a file outside the allowed
        folders), or a document that cannot be read now (a file gone, a site down), searches the
        indexed copy one of its scopes holds (``"stored"``); with none, the refusal stands."""
        if source.startswith(STORED_PREFIXES):
            return source, None  # text stored under a key, an upload: nothing to index again
        wanted = caller.default_scope if requested is None else requested
        if wanted is not None and not caller.may(wanted, Role.WRITE):
            held = self._holding(source, caller, requested)
            if held is not None:
                return held.uri, STORED  # checked first: a reader's search is no refusal to record
        scope = caller.scope_for(requested, write=True)
        try:
            outcome = self._fresh(scope, source, access)
        except DocumentError:  # not readable now (refused, gone, unreachable): the indexed copy, if any
            held = self._holding(source, caller, requested)
            if held is None:
                raise
            return held.uri, STORED
        if outcome is not None and outcome.status == "failed":
            raise DocumentError(outcome.error or "could not be indexed", source=source)
        return self._uri(source, access, scope), None if outcome is None else outcome.status

    def _holding(self, source: str, caller: Caller, requested: str | None) -> KnowledgeSource | None:
        """The indexed ``source`` of the scope set a read in ``requested`` searches (scope first, then
        global), with chunks: a document whose every indexing failed is on record, but there is no
        copy of it. A file is looked for under the name each scope would give it."""
        for scope in caller.readable(requested):
            held = self.store.get_source(scope, _name_in(source, scope))
            if held is not None and held.searchable:
                return held
        return None

    def read(self, request: KnowledgeReadRequest, caller: Caller, access: FileAccess) -> KnowledgeReadResponse:
        """A document's text from ``offset``, at most ``limit`` characters (default: the read page size).

        A file or URL is read as it is now. One that cannot be read now (over HTTP, a file outside
        the allowed folders; a file gone; a site down) is read from its indexed copy when the scope
        set holds one (``stored``): what was indexed is what search cites, so a team's dashboard
        can open what an agent indexed over stdio."""
        limit = request.limit or self.tuning.knowledge_read_chars
        source = request.source
        found = self._stored(source, caller, request.scope) if source.startswith(STORED_PREFIXES) else None
        if found is None:
            try:
                document = self._document(source, access, _naming_scope(caller, request.scope))
            except DocumentError:  # not readable now (refused, gone, unreachable): the indexed copy, if any
                found = self._find_stored(source, caller, request.scope)
                if found is None:
                    raise
        if found is not None:
            held, chunks = found
            text, title, fmt = _rebuild(chunks), held.title, held.format
            starts = chunk_section_starts(chunks)
        else:
            fmt = document.format or format_of(document.name, document.content_type)
            parsed = parse_document(document.data, document.name, fmt, guard_limits(self.settings))
            text, title, starts = parsed.text, parsed.title, parsed.section_starts()
        end = min(len(text), request.offset + limit)
        shown = sections_between(starts, request.offset, end) if end > request.offset else []
        return KnowledgeReadResponse(
            source=source,
            title=title,
            format=fmt,
            text=text[request.offset : end],
            offset=request.offset,
            next_offset=end if end < len(text) else None,
            total_chars=len(text),
            sections=[ReadSection(start=s.start, section=list(s.section), page=s.page) for s in shown],
            stored=found is not None,
        )

    def _find_stored(
        self, uri: str, caller: Caller, requested: str | None
    ) -> tuple[KnowledgeSource, list[KnowledgeChunk]] | None:
        """The stored document ``uri`` of the scope set (see :meth:`_holding`) and its chunks."""
        held = self._holding(uri, caller, requested)
        return None if held is None else (held, self.store.source_chunks(held.scope, held.uri))

    def _stored(self, uri: str, caller: Caller, requested: str | None) -> tuple[KnowledgeSource, list[KnowledgeChunk]]:
        """As :meth:`_find_stored`; raises ``SourceNotFoundError`` when the scope set holds none."""
        found = self._find_stored(uri, caller, requested)
        if found is None:
            raise SourceNotFoundError(f"nothing is stored under {uri!r} in this scope or the global one")
        return found

    def match(self, request: KnowledgeMatchRequest, caller: Caller, access: FileAccess) -> KnowledgeMatchResponse:
        """Regex matches in the indexed chunks of the scope set, capped and within the time budget."""
        import regex

        compiled = compile_pattern(request.pattern, regex.IGNORECASE if request.ignore_case else 0)
        scopes = caller.readable(request.scope)
        uri = None if request.source is None else self._indexed_uri(request.source, caller, request.scope, access)
        cap = min(request.limit, self.tuning.knowledge_match_max_results)
        deadline = time.monotonic() + self.tuning.knowledge_match_budget_s
        found: list[KnowledgeMatch] = []
        seen: set[tuple[str, str, int]] = set()
        scanned = 0
        complete = True
        for chunk in self.store.scan_chunks(ChunkFilter(scopes=scopes, uri=uri)):
            left = deadline - time.monotonic()
            if left <= 0 or len(found) >= cap:
                complete = False
                break
            scanned += 1
            try:
                matches = list(compiled.finditer(chunk.text, timeout=left))
            except TimeoutError:
                complete = False
                break
            for m in matches:
                at = (chunk.scope, chunk.uri, chunk.start + m.start())
                if at in seen:  # the overlap of two chunks
                    continue
                seen.add(at)
                found.append(_match(chunk, m.start(), m.end()))
                if len(found) >= cap:
                    break
        return KnowledgeMatchResponse(matches=found, complete=complete, scanned_chunks=scanned)

    def store_text(
        self, request: KnowledgeStoreRequest, caller: Caller, *, now: bool = False
    ) -> KnowledgeStored | KnowledgeAccepted:
        """Index ``text`` under ``key`` in the caller's scope: within the call, or as a job when it is
        large (unless ``now``: the CLI, which holds no request, waits for it)."""
        scope = caller.scope_for(request.scope, write=True)
        # Text given to be indexed is a write like a memorize: the secret policy decides (a document
        # file is always redacted instead, when it is indexed).
        request, redacted = SecretScreen(self.settings.secret_policy).model(request, ("title", "text"))
        document = text_document(key_uri(request.key), request.title.strip(), request.text)
        answer = self._index(scope, document, caller, now=now)
        if redacted and isinstance(answer, KnowledgeStored):
            return answer.model_copy(update={"redacted": len(redacted)})
        return answer

    def upload(
        self, name: str, data: bytes, caller: Caller, scope: str | None = None
    ) -> KnowledgeStored | KnowledgeAccepted:
        """Index an uploaded document as ``upload:NAME`` in the caller's scope (its name gives the
        format): now, or as a job when it is large."""
        if "/" in name or "\\" in name or name in (".", ".."):
            raise ValidationError("name: a file name, without folders", field="name")
        if any(ord(c) < 32 or ord(c) == 127 for c in name):
            # Stored as the document's uri, such a name could be neither typed nor shown to read or delete it.
            raise ValidationError(
                "name: a file name without control characters (NUL, escapes, line breaks)", field="name"
            )
        where = caller.scope_for(scope, write=True)
        return self._index(where, Document(uri=f"upload:{name}", name=name, data=data), caller)

    def _index(
        self, scope: str, document: Document, caller: Caller, *, now: bool = False
    ) -> KnowledgeStored | KnowledgeAccepted:
        if now or len(document.data) <= INDEX_IN_REQUEST_MAX_BYTES:
            return self._index_one(scope, document)
        board = self.runner.board
        job = Job(id=new_job_id(), kind=JobKind.INGEST, total=1, owner=caller.principal, scopes=(scope,))
        board.create(job)
        self._later.submit(self._index_as_job, job.id, scope, document)
        started = JobPublic.of(board.get(job.id))
        return KnowledgeAccepted(**started.model_dump(), source=document.uri, scope=scope)

    def _index_as_job(self, job_id: str, scope: str, document: Document) -> None:
        """Index ``document`` for job ``job_id``, recording its outcome as an ingest's."""
        board = self.runner.board
        times = PhaseTimes()
        try:
            board.start(job_id)
            with self.model_gate.reading():
                outcome = next(
                    iter(index_documents(self.store, self.embedder, scope, [document], self.settings, times=times))
                )
            item = document_item(job_id, 0, scope, document.uri, FileAccess(), force=False)
            board.record(job_id, {document.uri: outcome_record(item, outcome, times.lap())})
        except Exception as exc:  # the job says why; the server goes on
            log.exception("indexing %s in the background failed", document.uri)
            board.fail(job_id, failure_text(exc))
        finally:
            # A large document's text, chunks and vectors were freed, and the model's runtime keeps
            # what its longest batches took: give both back to the system.
            release_work_memory(self.embedder)
            release_free_memory()

    def _index_one(self, scope: str, document: Document) -> KnowledgeStored:
        """Index one document now; its outcome, or its failure as ``DocumentError``."""
        with self.model_gate.reading():  # embedded and written with one model (a re-embed swaps between)
            outcome = next(iter(index_documents(self.store, self.embedder, scope, [document], self.settings)))
        if outcome.status == "failed":
            raise DocumentError(outcome.error or "could not be indexed", source=document.uri)
        return KnowledgeStored(
            source=document.uri, scope=scope, chunks=outcome.chunks, status=outcome.status, redacted=outcome.redacted
        )

    def delete(self, request: KnowledgeDeleteRequest, caller: Caller, access: FileAccess) -> KnowledgeDeleted:
        """Remove a document and its chunks from the caller's scope."""
        scope = caller.scope_for(request.scope, write=True)
        uri = _name_in(request.source, scope)
        removed = self.store.delete_source(scope, uri)
        return KnowledgeDeleted(source=uri, scope=scope, chunks=removed.chunk_count)

    def prune(self, request: KnowledgePruneRequest, caller: Caller, access: FileAccess) -> KnowledgePruned:
        """Remove from the caller's scope the documents indexed from under ``request.folders`` whose
        files are gone (deleted, or moved away: a moved file is indexed again under its new path; a
        folder gone whole takes all its documents). Every folder is checked before anything is
        removed: a file, or a folder outside those this caller may name, is refused."""
        scope = caller.scope_for(request.scope, write=True)
        folders = [prune_folder(given, access) for given in request.folders]
        gone = [s for s in self.store.sources([scope]) if file_gone(s.uri, scope, folders)]
        if not request.dry_run:
            # One batch, whatever the number (a folder gone whole); a source removed meanwhile (by
            # another prune, a delete) is left out of what it answers.
            gone = self.store.delete_sources(scope, [s.uri for s in gone])
        removed = [KnowledgeDeleted(source=s.uri, scope=scope, chunks=s.chunk_count) for s in gone]
        return KnowledgePruned(scope=scope, dry_run=request.dry_run, removed=removed)

    def sources(self, caller: Caller, scope: str | None = None) -> list[SourcePublic]:
        """The documents indexed in the scope set."""
        return [SourcePublic.of(s) for s in self.store.sources(caller.readable(scope))]

    def sources_page(self, caller: Caller, scope: str | None, offset: int, limit: int) -> SourcePage:
        """A page of :meth:`sources`: what an agent's context or a dashboard table can hold."""
        return SourcePage.of(self.store.sources(caller.readable(scope)), offset, limit)

    # -- bulk ----------------------------------------------------------------------------------

    def ingest(
        self,
        request: IngestRequest,
        caller: Caller,
        access: FileAccess,
        progress: Callable[[IndexOutcome], None] | None = None,
        times: PhaseTimes | None = None,
        expansion: Expansion | None = None,
    ) -> IngestReport:
        """Index every document the paths name into the caller's scope; one outcome per document.
        ``expansion``: the request's paths as :func:`expand_paths` gave them already (the CLI needs their
        count for its progress line first), so the folders are not walked twice."""
        scope = caller.scope_for(request.scope, write=True)
        began = time.monotonic()
        if expansion is None:
            expansion = expand_paths(request.paths, request.glob, access)
        outcomes: list[IndexOutcome] = []
        for outcome in index_documents(
            self.store,
            self.embedder,
            scope,
            self._readers(expansion.sources, access, scope),
            self.settings,
            force=request.force,
            times=times,
        ):
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
        failures = [IngestFailure(source=o.uri, error=o.error or "") for o in outcomes if o.status == "failed"]
        return IngestReport(
            documents=len(outcomes),
            indexed=sum(o.status == "indexed" for o in outcomes),
            unchanged=sum(o.status == "unchanged" for o in outcomes),
            failed=len(failures),
            chunks=sum(o.chunks for o in outcomes if o.status == "indexed"),
            failures=failures,
            elapsed_s=round(time.monotonic() - began, 3),
            left_out=expansion.left_out,
        )

    def ingest_job(self, request: IngestRequest, caller: Caller, access: FileAccess) -> IngestAccepted:
        """Start an ingest job: one item per document, run in the background (embedded: a bounded pool
        of this process; distributed: one task per document on the workers' ``ingest`` queue).
        Its progress and, when done, each document's outcome are at ``GET /v1/jobs/{id}``."""
        scope = caller.scope_for(request.scope, write=True)
        expansion = expand_paths(request.paths, request.glob, access)
        checked = [checked_source(source, access, scope) for source in expansion.sources]
        job = Job(id=new_job_id(), kind=JobKind.INGEST, total=len(checked), owner=caller.principal, scopes=(scope,))
        items = [document_item(job.id, i, scope, s, access, force=request.force) for i, s in enumerate(checked)]
        self.runner.ingest(job, items)
        started = JobPublic.of(self.runner.board.get(job.id))
        return IngestAccepted(**started.model_dump(), left_out=expansion.left_out)

    def _readers(self, sources: Sequence[str], access: FileAccess, scope: str) -> Iterator[Callable[[], Document]]:
        for source in sources:
            yield lambda source=source: self._document(source, access, scope)  # type: ignore[misc]


def _naming_scope(caller: Caller, requested: str | None) -> str:
    """The scope whose names a read or search in ``requested`` gives the files it names."""
    return (caller.default_scope if requested is None else requested) or ""


def _named_already(source: str) -> bool:
    """Whether ``source`` is the name it is indexed under as given: stored text, an upload, a URL,
    a file named by its path in the scope's checkout."""
    return source.startswith(STORED_PREFIXES) or is_url(source) or is_checkout_name(source)


def _name_in(source: str, scope: str) -> str:
    """The name ``source`` is indexed under in ``scope`` (a file's: its real path, or its path in a
    checkout of the scope), without reading it: what a gone or refused file is looked up by."""
    if _named_already(source):
        return source
    try:
        return indexed_name(str(Path(source).expanduser().resolve()), scope)
    except (OSError, RuntimeError):  # a name no file can have: looked up as it was given
        return source


def _citation(chunk: KnowledgeChunk, score: float) -> ChunkCitation:
    return ChunkCitation(
        source=chunk.uri,
        scope=chunk.scope,
        title=chunk.title,
        section=list(chunk.section),
        page=chunk.page,
        start=chunk.start,
        end=chunk.end,
        score=round(score, 6),
        text=chunk.text,
    )


def _match(chunk: KnowledgeChunk, start: int, end: int) -> KnowledgeMatch:
    return KnowledgeMatch(
        source=chunk.uri,
        title=chunk.title,
        section=list(chunk.section),
        page=chunk.page,
        start=chunk.start + start,
        end=chunk.start + end,
        match=chunk.text[start:end],
        context=chunk.text[max(0, start - _CONTEXT_CHARS) : end + _CONTEXT_CHARS],
    )


def _rebuild(chunks: Sequence[KnowledgeChunk]) -> str:
    """A stored document's text from its chunks: each chunk sits at its offsets (they overlap).
    What no chunk covers is the whitespace between blocks, which parsers make of line breaks: it
    is filled with them, so the text is the parsed one (as ``read`` of the file gives it)."""
    if not chunks:
        return ""
    text = ["\n"] * max(c.end for c in chunks)
    for chunk in chunks:
        text[chunk.start : chunk.end] = chunk.text
    return "".join(text)
