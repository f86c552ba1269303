"""``hivemem knowledge search|read|match|store|delete|ingest|prune|sources``: documents from the command line.

The CLI reads the caller's own files (as the stdio MCP server does). ``ingest`` shows a live
progress line on stderr (documents, chunks, errors, rate, ETA), ends with a summary that lists
every failed document with its reason and counts the folders' files of formats it does not read,
and exits 0 when every document was indexed or unchanged, 3 when some failed ("partial"), 2 on an
error that stopped the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from api.cli.opened import opened_service
from api.cli.text import indented
from hivemem.config import Settings
from hivemem.scope import derive_scope
from hivemem.wording import counted

if TYPE_CHECKING:
    from api.services.caller import Caller
    from api.services.knowledge import KnowledgeService
    from hivemem.knowledge_schemas import IngestReport, IngestRequest, KnowledgeReadResponse
    from workers.documents.sources import FileAccess
    from workers.knowledge_jobs import IndexOutcome

__all__ = ["COMMANDS", "PARTIAL", "add_parser", "run"]

COMMANDS = ("knowledge",)

PARTIAL = 3


_SCOPE_HELP = "default: derived from the working directory"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``knowledge`` command and its subcommands."""
    knowledge = sub.add_parser("knowledge", help="index and search documents (pdf, docx, html, md, txt, URLs)")
    commands = knowledge.add_subparsers(dest="knowledge", required=True)

    search = commands.add_parser("search", help="search indexed documents")
    search.add_argument("query", help="what to look for, in words")
    search.add_argument("--source", default=None, help="one file or URL (indexed first when new or changed)")
    search.add_argument("--scope", default=None, help="default: derived from the working directory")
    search.add_argument("--limit", type=int, default=10, help="at most this many chunks (default 10)")
    search.add_argument("--json", action="store_true", help="print JSON (each result with its chunk text)")

    read = commands.add_parser("read", help="print a document's text (a file, a URL, or key:NAME)")
    read.add_argument("source", help="a file, a URL, or key:NAME")
    read.add_argument("--scope", default=None, help=_SCOPE_HELP)
    read.add_argument("--offset", type=int, default=0, help="the first character to print")
    read.add_argument("--limit", type=int, default=None, help="at most this many characters")
    read.add_argument("--json", action="store_true", help="print JSON")

    match = commands.add_parser("match", help="regular expression over indexed chunks")
    match.add_argument("pattern", help="a regular expression")
    match.add_argument("--source", default=None, help="only this document (a file, URL or key:NAME)")
    match.add_argument("--scope", default=None, help=_SCOPE_HELP)
    match.add_argument("--limit", type=int, default=50, help="at most this many matches (default 50)")
    match.add_argument("-i", "--ignore-case", action="store_true", help="match regardless of case")
    match.add_argument("--json", action="store_true", help="print JSON")

    store = commands.add_parser("store", help="index text under a key (text from --text or stdin)")
    store.add_argument("key", help="the name it is stored under (read back as key:NAME)")
    store.add_argument("--text", default=None, help="default: read stdin")
    store.add_argument("--title", default="", help="the document's title")
    store.add_argument("--scope", default=None, help=_SCOPE_HELP)

    delete = commands.add_parser("delete", help="remove an indexed document (file, URL or key:NAME)")
    delete.add_argument("source", help="a file, a URL, or key:NAME")
    delete.add_argument("--scope", default=None, help=_SCOPE_HELP)

    ingest = commands.add_parser("ingest", help="index files, folders and .urls files (one URL per line)")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files, folders and .urls files")
    ingest.add_argument("--scope", default=None, help="default: derived from the working directory")
    ingest.add_argument("--glob", action="append", default=[], help="only files matching (repeatable), e.g. '*.pdf'")
    ingest.add_argument("--force", action="store_true", help="index unchanged documents again")
    ingest.add_argument(
        "--prune", action="store_true", help="first remove the documents of the named folders whose files are gone"
    )
    ingest.add_argument("--json", action="store_true", help="print the summary as JSON")

    prune = commands.add_parser(
        "prune", help="remove the documents indexed from folders whose files are gone (deleted or moved away)"
    )
    prune.add_argument("folders", nargs="+", metavar="FOLDER", help="folders indexed before")
    prune.add_argument("--scope", default=None, help=_SCOPE_HELP)
    prune.add_argument("--dry-run", dest="dry_run", action="store_true", help="list them, remove nothing")
    prune.add_argument("--json", action="store_true", help="print JSON")

    sources = commands.add_parser("sources", help="list indexed documents")
    sources.add_argument("--scope", default=None, help=_SCOPE_HELP)
    sources.add_argument("--json", action="store_true", help="print JSON")


_PASSAGE_CHARS = 300  # of a passage under its citation; --json gives the whole chunk


def _citation(source: str, title: str, section: Sequence[str], page: int | None) -> str:
    """Where a passage is: its document, then the section and page where they are known."""
    where = [" > ".join(section)] if section else []
    where += [f"page {page}"] if page else []
    return f"{title}  {source}" + (f"  [{', '.join(where)}]" if where else "")


def _dump(value: object) -> None:
    print(json.dumps(value, indent=2, default=str))


class _Progress:
    """One live line: documents, chunks, errors, rate and ETA."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.out = total, out
        self.done = self.chunks = self.errors = 0
        self.began = time.monotonic()
        self.live = out.isatty()
        self._last_print = 0.0

    def __call__(self, outcome: IndexOutcome) -> None:
        self.done += 1
        self.chunks += outcome.chunks if outcome.status == "indexed" else 0
        self.errors += outcome.status == "failed"
        now = time.monotonic()
        if self.live or now - self._last_print >= 5 or self.done == self.total:
            self._last_print = now
            self.out.write(("\r" if self.live else "") + self.line() + ("" if self.live else "\n"))
            self.out.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.began, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        return (
            f"[{bar}] {self.done}/{counted(self.total, 'document')}, {counted(self.chunks, 'chunk')}, "
            f"{counted(self.errors, 'error')}, "
            f"{rate:.1f} docs/s, ETA {eta:.0f} s"
        )

    def finish(self) -> None:
        if self.live:
            self.out.write("\n")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run one ``knowledge`` subcommand; the exit code."""
    from api.services.caller import Caller
    from workers.documents.sources import FileAccess

    caller = Caller(principal="cli", default_scope=derive_scope(Path.cwd()))
    access = FileAccess(project=Path.cwd())
    with opened_service(settings) as service:
        handler = _HANDLERS.get(args.knowledge)
        if handler is None:
            return _ingest(args, service.knowledge, caller, access)
        handler(args, service.knowledge, caller, access)
    return 0


def _search(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> None:
    from hivemem.knowledge_schemas import KnowledgeSearchRequest

    request = KnowledgeSearchRequest(query=args.query, source=args.source, scope=args.scope, limit=args.limit)
    found = knowledge.search(request, caller, access)
    if args.json:
        _dump(found.model_dump(mode="json"))
        return
    for hit in found.results:
        print(f"{hit.score:.3f}  {_citation(hit.source, hit.title, hit.section, hit.page)}")
        print(indented(hit.text, _PASSAGE_CHARS))
    if not found.results:
        print("no chunks found")


def _read(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> None:
    from hivemem.knowledge_schemas import KnowledgeReadRequest

    request = KnowledgeReadRequest(source=args.source, scope=args.scope, offset=args.offset, limit=args.limit)
    text_page = knowledge.read(request, caller, access)
    if args.json:
        _dump(text_page.model_dump(mode="json"))
    else:
        print(_with_headings(text_page))


def _match(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> None:
    from hivemem.knowledge_schemas import KnowledgeMatchRequest

    request = KnowledgeMatchRequest(
        pattern=args.pattern, source=args.source, scope=args.scope, limit=args.limit, ignore_case=args.ignore_case
    )
    matched = knowledge.match(request, caller, access)
    if args.json:
        _dump(matched.model_dump(mode="json"))
        return
    for m in matched.matches:
        print(f"{m.source}:{m.start}  [{' > '.join(m.section) or '-'}]  {m.context}")
    if not matched.complete:
        print("(stopped early: the result cap or the time budget was reached)", file=sys.stderr)


def _store(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, _: FileAccess) -> None:
    from hivemem.knowledge_schemas import MAX_STORED_TEXT, KnowledgeStoreRequest

    # At most one character past the limit: enough for the limit's own error, and an endless
    # stdin (`< /dev/zero`, a stream) is not read into memory whole.
    text = args.text if args.text is not None else sys.stdin.read(MAX_STORED_TEXT + 1)
    request = KnowledgeStoreRequest(key=args.key, text=text, title=args.title, scope=args.scope)
    _dump(knowledge.store_text(request, caller, now=True).model_dump(mode="json"))


def _delete(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> None:
    from hivemem.knowledge_schemas import KnowledgeDeleteRequest

    deleted = knowledge.delete(KnowledgeDeleteRequest(source=args.source, scope=args.scope), caller, access)
    _dump(deleted.model_dump(mode="json"))


def _prune(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> None:
    from hivemem.knowledge_schemas import KnowledgePruneRequest

    request = KnowledgePruneRequest(folders=args.folders, scope=args.scope, dry_run=args.dry_run)
    pruned = knowledge.prune(request, caller, access)
    if args.json:
        _dump(pruned.model_dump(mode="json"))
        return
    verb = "would remove" if pruned.dry_run else "removed"
    print(f"{verb} {counted(len(pruned.removed), 'document')} whose files are gone")
    for gone in pruned.removed:
        print(f"  {gone.source} ({counted(gone.chunks, 'chunk')})")


def _sources(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> None:
    from api.services.knowledge_paths import file_gone

    listed = knowledge.sources(caller, args.scope)
    if args.json:
        _dump([s.model_dump(mode="json") for s in listed])
        return
    if not listed:
        print("no documents indexed")
    for s in listed:
        state = f"error: {s.last_error}" if s.last_error else counted(s.chunk_count, "chunk")
        hint = ", its file is gone (knowledge prune)" if file_gone(s.uri, s.scope, project=access.project) else ""
        print(f"{s.scope or 'global'}  {s.uri}  ({s.format.value}, {state}{hint})")


_HANDLERS: dict[str, Callable[[argparse.Namespace, KnowledgeService, Caller, FileAccess], None]] = {
    "search": _search,
    "read": _read,
    "match": _match,
    "store": _store,
    "delete": _delete,
    "prune": _prune,
    "sources": _sources,
}


def _ingest(args: argparse.Namespace, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> int:
    from api.services.knowledge_paths import expand_paths
    from hivemem.errors import ValidationError
    from hivemem.knowledge_schemas import IngestReport, IngestRequest

    request = IngestRequest(paths=args.paths, scope=args.scope, glob=args.glob, force=args.force)
    pruned = _pruned_first(request, knowledge, caller, access) if args.prune else []
    try:
        if knowledge.settings.broker_url:
            return _ingest_on_workers(args, knowledge, request, caller, access, pruned)
        expansion = expand_paths(request.paths, request.glob, access)
    except ValidationError as exc:
        if not pruned or exc.field != "paths":
            raise
        # The folders hold nothing to index any more: what they held is what the prune removed.
        empty = IngestReport(
            documents=0, indexed=0, unchanged=0, failed=0, chunks=0, failures=[], elapsed_s=0.0, pruned=pruned
        )
        return _summary(args, empty)
    progress = _Progress(len(expansion.sources), sys.stderr)
    report = knowledge.ingest(request, caller, access, progress, expansion=expansion)
    progress.finish()
    return _summary(args, report.model_copy(update={"pruned": pruned}))


def _pruned_first(request: IngestRequest, knowledge: KnowledgeService, caller: Caller, access: FileAccess) -> list[str]:
    """``ingest --prune``: the documents removed from the named folders (the other paths are files
    and URLs, which have nothing to prune)."""
    from hivemem.errors import ValidationError
    from hivemem.knowledge_schemas import KnowledgePruneRequest

    folders = [given for given in request.paths if _is_folder(given)]
    if not folders:
        raise ValidationError("--prune removes the documents of folders whose files are gone: name a folder")
    pruned = knowledge.prune(KnowledgePruneRequest(folders=folders, scope=request.scope), caller, access)
    return [gone.source for gone in pruned.removed]


def _is_folder(given: str) -> bool:
    try:
        return Path(given).expanduser().is_dir()
    except (OSError, RuntimeError):
        return False


def _summary(args: argparse.Namespace, report: IngestReport) -> int:
    from api.services.knowledge_paths import left_out_words

    if args.json:
        _dump(report.model_dump(mode="json"))
    else:
        print(
            f"{counted(report.documents, 'document')}: {report.indexed} indexed, {report.unchanged} unchanged, "
            f"{report.failed} failed; {counted(report.chunks, 'chunk')} in {report.elapsed_s:.1f} s"
        )
        for failure in report.failures:
            print(f"  failed: {failure.source}: {failure.error}")
        if report.left_out:
            print(f"  left out: {left_out_words(report.left_out)}")
        for gone in report.pruned:
            print(f"  removed, its file is gone: {gone}")
    return PARTIAL if report.failed else 0


def _ingest_on_workers(
    args: argparse.Namespace,
    knowledge: KnowledgeService,
    request: IngestRequest,
    caller: Caller,
    access: FileAccess,
    pruned: list[str],
) -> int:
    """The distributed shape: one job, a task per document on the workers; progress from the job board."""
    assert knowledge.runner is not None
    began = time.monotonic()
    job = knowledge.ingest_job(request, caller, access)
    board = knowledge.runner.board
    live = sys.stderr.isatty()
    while True:
        current = board.get(job.id)
        elapsed = max(time.monotonic() - began, 1e-9)
        rate = current.done / elapsed
        eta = (current.total - current.done) / rate if rate > 0 else 0.0
        line = f"{current.done}/{counted(current.total, 'document')} on the workers, {rate:.1f} docs/s, ETA {eta:.0f} s"
        sys.stderr.write(("\r" if live else "") + line + ("" if live else "\n"))
        sys.stderr.flush()
        if current.state.final:
            break
        time.sleep(0.5 if live else 5.0)
    if live:
        sys.stderr.write("\n")
    if current.result is None:
        print(f"error: ingest job {job.id} failed: {current.error}", file=sys.stderr)
        return 2
    from hivemem.knowledge_schemas import IngestFailure, IngestReport

    items = current.result["items"]
    failures = [IngestFailure(source=i["id"], error=i.get("error", "")) for i in items if i["outcome"] == "failed"]
    report = IngestReport(
        documents=len(items),
        indexed=int(current.result["indexed"]),
        unchanged=int(current.result["unchanged"]),
        failed=len(failures),
        chunks=int(current.result["chunks"]),
        failures=failures,
        elapsed_s=round(time.monotonic() - began, 3),
        left_out=job.left_out,
        pruned=pruned,
    )
    return _summary(args, report)


def _with_headings(page: KnowledgeReadResponse) -> str:
    """A page of a document's text with its headings on lines of their own (``## A > B (page N)``)
    where they begin; the text itself is printed as it is, so its offsets stay those of ``--json``."""
    parts: list[str] = []
    shown = page.sections
    for i, section in enumerate(shown):
        end = shown[i + 1].start if i + 1 < len(shown) else page.offset + len(page.text)
        heading = " > ".join(section.section)
        page_note = f"(page {section.page})" if section.page is not None else ""
        if heading or page_note:
            parts.append("## " + " ".join(part for part in (heading, page_note) if part))
        parts.append(page.text[section.start - page.offset : end - page.offset].strip("\n"))
    return "\n\n".join(parts) if shown else page.text
