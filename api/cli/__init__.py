"""The ``hivemem`` command line: the parser of every command group, and the dispatch to each
(``hivemem --help`` lists them; tests/surface/cli_commands.json keeps every command and option)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from api.cli.audit import add_parser as add_audit_parser
from api.cli.audit import run as run_audit
from api.cli.client import CLIENT_COMMANDS, Remote, server_for
from api.cli.doctor import add_parser as add_doctor_parser
from api.cli.doctor import run as run_doctor
from api.cli.jobs import add_parser as add_jobs_parser
from api.cli.jobs import run as run_jobs
from api.cli.knowledge import add_parser as add_knowledge_parser
from api.cli.knowledge import run as run_knowledge
from api.cli.memories import add_parser as add_memories_parser
from api.cli.memories import run as run_memories
from api.cli.moments import MOMENT_HELP, moment
from api.cli.opensearch import add_parser as add_opensearch_parser
from api.cli.opensearch import run as run_opensearch
from api.cli.reembed import add_parser as add_reembed_parser
from api.cli.reembed import run as run_reembed
from api.cli.setup import add_parser as add_setup_parser
from api.cli.setup import run as run_setup
from api.cli.text import indented
from api.cli.tokens import add_parser as add_token_parser
from api.cli.tokens import run as run_tokens
from api.cli.transfer import add_parsers as add_transfer_parsers
from api.cli.transfer import run as run_transfer
from hivemem.config import Settings, redact_url
from hivemem.errors import ConfirmationRequired, HivememError
from hivemem.model import GLOBAL_SCOPE, MemoryType, Source
from hivemem.scope import derive_scope
from workers.queues import QUEUES

__all__ = ["main"]


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _json_object(text: str) -> dict[str, Any]:
    """A command-line JSON object (``--details``), or a usage error saying what is wrong."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _link(text: str) -> dict[str, str]:
    """``TYPE:ID`` (``--related-to achieves:<goal id>``), or a usage error."""
    kind, sep, target = text.partition(":")
    if not sep or not kind or not target:
        raise argparse.ArgumentTypeError("must be TYPE:ID, e.g. achieves:<goal id>")
    return {"relationship_type": kind, "target_id": target}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hivemem", description="Team-shared long-term memory for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP server (REST at /v1, MCP at /mcp)")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8765)")

    mcp = sub.add_parser("mcp", help="run the MCP server on stdio (for Claude Code, Cursor, …)")
    mcp.add_argument("--scope", default=None, help="lock the session to this scope (default: from the working dir)")

    memorize = sub.add_parser("memorize", help="store a memory")
    memorize.add_argument("--title", required=True, help="a short, specific title")
    memorize.add_argument("--content", required=True, help="the memory itself: the decision, fix or fact")
    memorize.add_argument("--scope", default=None, help="default: derived from the working directory")
    memorize.add_argument("--global", dest="global_", action="store_true", help="store in the global scope")
    memorize.add_argument(
        "--type",
        dest="memory_type",
        default=MemoryType.FACT.value,
        choices=[t.value for t in MemoryType],
        help="what kind of memory (default: fact)",
    )
    memorize.add_argument(
        "--importance", type=float, default=None, help="0-1 (default 0.5, or what a failure's severity implies)"
    )
    memorize.add_argument(
        "--details", type=_json_object, default=None, help="a JSON object, e.g. for a failure: '{\"error\": ...}'"
    )
    memorize.add_argument(
        "--source",
        default=Source.USER_CONFIRMED.value,
        choices=[s.value for s in Source],
        help="who vouches for it (default: user_confirmed, as a person types it)",
    )
    memorize.add_argument("--tag", dest="tags", action="append", default=[], help="a tag (repeatable)")
    memorize.add_argument(
        "--related-to",
        dest="related_to",
        type=_link,
        action="append",
        default=[],
        metavar="TYPE:ID",
        help="an edge to an existing memory (repeatable): achieves:GOAL, closes:GOAL, supersedes:OLD, depends_on:ID",
    )
    memorize.add_argument(
        "--thread", default=None, help="the conversation or task this is one step of (recall reads its neighbours)"
    )

    remember = sub.add_parser("remember", help="recall memories by meaning")
    remember.add_argument("queries", nargs="+", metavar="QUERY", help="1-5 queries, fused")
    remember.add_argument("--scope", default=None, help="default: derived from the working directory")
    remember.add_argument("--limit", type=int, default=None, help="at most this many results (default 10)")
    remember.add_argument(
        "--type",
        dest="memory_types",
        action="append",
        choices=[t.value for t in MemoryType],
        help="only memories of this type (repeatable)",
    )
    remember.add_argument("--tag", dest="tags", action="append", help="only memories with this tag (repeatable)")
    remember.add_argument(
        "--min-relevance", dest="min_relevance", type=float, default=None, help="leave out results scored below (0-1)"
    )
    remember.add_argument(
        "--after", default=None, type=moment, metavar="WHEN", help=f"only memories created at or after ({MOMENT_HELP})"
    )
    remember.add_argument("--before", default=None, type=moment, metavar="WHEN", help="only memories created before")
    remember.add_argument("--json", action="store_true", help="print JSON")

    get = sub.add_parser("get", help="show one memory (of this project's scope, or global)")
    get.add_argument("id", help="the memory's id")
    get.add_argument("--scope", default=None, help="the memory's scope (default: derived from the working directory)")

    forget = sub.add_parser("forget", help="delete a memory for good (audited)")
    forget.add_argument("id", help="the memory's id")
    forget.add_argument("--confirm", action="store_true", help="required: forgetting cannot be undone")
    forget.add_argument(
        "--scope", default=None, help="the memory's scope (default: derived from the working directory)"
    )

    memory = sub.add_parser("memory", help="a memory's audit trail, undo, and consolidation")
    memory_sub = memory.add_subparsers(dest="memory_command", required=True)
    audit = memory_sub.add_parser("audit", help="the audit records of one memory (forget, merge, supersede, undo)")
    audit.add_argument("id", help="the memory's id (it may be forgotten)")
    audit.add_argument("--scope", default=None, help="the memory's scope (default: derived from the working directory)")
    promote = memory_sub.add_parser(
        "promote", help="copy a memory (e.g. of your personal scope) to a team scope, keeping its author"
    )
    promote.add_argument("id", help="the memory's id")
    promote.add_argument("--to", required=True, help="the team scope the copy goes to")
    promote.add_argument(
        "--scope", default=None, help="the memory's scope (default: derived from the working directory)"
    )
    undo = memory_sub.add_parser("undo", help="undo the merge, supersede or consolidation an audit record names")
    undo.add_argument("audit_id", help="the audit record's id (hivemem memory audit ID lists them)")
    consolidate = memory_sub.add_parser(
        "consolidate", help="consolidate a goal's findings under its closing note (or the goal itself)"
    )
    consolidate.add_argument("goal_id", help="the goal memory's id")
    consolidate.add_argument(
        "--scope", default=None, help="the goal's scope (default: derived from the working directory)"
    )
    consolidate_only = memory_sub.add_parser(
        "sleep-consolidate",
        help="turn clusters of near-identical recent memories into one insight each, now (no archiving)",
    )
    _sleep_options(consolidate_only)
    whole_pass = sub.add_parser(
        "sleep", help="the scheduled sleep pass, now: consolidate recent near-duplicates, archive what has faded"
    )
    _sleep_options(whole_pass)

    add_knowledge_parser(sub)
    sub.add_parser("config", help="print the effective settings")
    add_opensearch_parser(sub)
    add_token_parser(sub)
    add_audit_parser(sub)
    add_jobs_parser(sub)
    add_transfer_parsers(sub)
    add_reembed_parser(sub)
    add_memories_parser(sub)
    add_setup_parser(sub)
    add_doctor_parser(sub)

    worker = sub.add_parser("worker", help="run a Celery worker of the distributed shape (needs HIVEMEM_BROKER_URL)")
    worker.add_argument("--queues", default=",".join(QUEUES), help=f"comma list (default all: {','.join(QUEUES)})")
    worker.add_argument("--concurrency", type=_positive_int, default=None, help="pool processes (default: one per CPU)")
    worker.add_argument("--device", choices=["cpu", "cuda"], default=None, help="embedder device (default: setting)")
    worker.add_argument(
        "--pool", choices=["prefork", "solo", "threads"], default="prefork", help="Celery's pool (default prefork)"
    )
    worker.add_argument("--loglevel", default=None, help="default: HIVEMEM_LOG_LEVEL")
    worker.add_argument(
        "--nice", type=int, choices=range(0, 20), default=0, metavar="0-19",
        help="lower CPU priority (a bulk/ingest pool on a machine that also serves queries)",
    )  # fmt: skip

    beat = sub.add_parser("beat", help="run the scheduler of periodic jobs (one per deployment)")
    beat.add_argument("--loglevel", default=None, help="default: HIVEMEM_LOG_LEVEL")

    _add_bench_parser(sub)
    return parser


# Commands whose module parses and runs them (api/cli/*.py).
_COMMAND_MODULES: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "opensearch": run_opensearch,
    "knowledge": run_knowledge,
    "token": run_tokens,
    "audit": run_audit,
    "jobs": run_jobs,
    "export": run_transfer,
    "import": run_transfer,
    "reembed": run_reembed,
    "memories": run_memories,
    "setup": run_setup,
    "doctor": run_doctor,
}


def _print_json(value: object) -> None:
    print(json.dumps(value, indent=2, default=str))


def _print_recall(response: dict[str, Any], *, as_json: bool) -> None:
    """A recall's answer (``RecallResponse`` as JSON): all of it, or a line and the content per result."""
    if as_json:
        _print_json(response)
        return
    if not response["results"]:
        print("no memories found")
    for r in response["results"]:
        about = [r["memory_type"], r["scope"] or "global", r["id"]]
        # Said in words, as the JSON says it in fields: history is not to be read as the current fact.
        if r.get("valid_to"):
            about.append(f"superseded {r['valid_to'][:10]}")
        if r.get("state", "working") != "working":
            about.append(r["state"])
        print(f"{r['label']} {r['score']:.3f}  {r['title']}  ({', '.join(about)})")
        print(indented(r["content"]))


def _memorize_body(args: argparse.Namespace) -> dict[str, Any]:
    """``POST /v1/memories``'s body from the command line (validated where it is used)."""
    return {
        "title": args.title,
        "content": args.content,
        "scope": GLOBAL_SCOPE if args.global_ else args.scope,
        "memory_type": args.memory_type,
        "source": args.source,
        "tags": args.tags,
        "related_to": args.related_to,
        "thread": args.thread,
        # Left out unless given: a failure's severity or a progress note's status sets it.
        **({} if args.importance is None else {"importance": args.importance}),
        **({} if args.details is None else {"details": args.details}),
    }


def _sleep_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scope", default=None, help="default: derived from the working directory")
    parser.add_argument("--threshold", type=float, default=None, help="cosine to a cluster's seed (default: 0.85)")
    parser.add_argument("--min-size", dest="min_size", type=int, default=None, help="memories per cluster (default: 3)")
    parser.add_argument(
        "--dry-run", dest="dry_run", action="store_true", help="report what would change, write nothing"
    )


def _recall_body(args: argparse.Namespace) -> dict[str, Any]:
    """``POST /v1/remember``'s body from the command line."""
    return {
        "query": args.queries[0] if len(args.queries) == 1 else args.queries,
        "scope": args.scope,
        "limit": args.limit,
        "memory_types": args.memory_types or None,
        "tags": args.tags,
        "min_relevance": args.min_relevance,
        "created_after": args.after,
        "created_before": args.before,
    }


def _given(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the options left out (a field left out takes its default)."""
    return {k: v for k, v in body.items() if v is not None}


def _through(remote: Remote, args: argparse.Namespace) -> int:
    """Run a client command on the server (:mod:`api.cli.client`), printing what the in-process one does.
    Nothing here imports a request schema: the server validates, and a CLI call is mostly its imports."""
    if args.command == "memorize":
        _print_json(remote.memorize({k: v for k, v in _memorize_body(args).items() if v is not None}))
    elif args.command == "remember":
        _print_recall(
            remote.remember({k: v for k, v in _recall_body(args).items() if v is not None}), as_json=args.json
        )
    elif args.command == "get":
        _print_json(remote.get(args.id, args.scope))
    else:
        removed = remote.forget(args.id, confirm=args.confirm, scope=args.scope)
        print(f"forgot {removed['id']}: {removed['title']}")
    return 0


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "serve":
        started = time.monotonic()
        # Said before the server's own imports (a second or more): a start is never silent.
        print(
            f"hivemem: starting: store {redact_url(settings.resolved_store_url())}, "
            f"model {settings.embed_model or 'all-MiniLM-L6-v2 (packaged)'}",
            file=sys.stderr,
            flush=True,
        )
        from api.main import serve
        from api.process.memory import tune_allocator

        tune_allocator()
        serve(settings, host=args.host, port=args.port, started=started)
        return 0
    if args.command == "mcp":
        from api.mcp.server import run_stdio
        from api.process.memory import tune_allocator

        tune_allocator()
        run_stdio(settings, scope=args.scope)
        return 0
    if args.command == "config":
        # `store_url` is empty by default: say which store that resolves to (the data folder's file).
        _print_json({"effective_store_url": redact_url(settings.resolved_store_url()), **settings.public_dict()})
        return 0
    if args.command in _COMMAND_MODULES:
        return _COMMAND_MODULES[args.command](args, settings)
    if args.command == "bench":
        return _bench(args, settings)
    if args.command in ("worker", "beat"):
        from api.cli.worker import run_beat, run_worker

        if args.command == "beat":
            return run_beat(settings, loglevel=args.loglevel)
        return run_worker(
            settings,
            queues=args.queues,
            concurrency=args.concurrency,
            device=args.device,
            pool=args.pool,
            loglevel=args.loglevel,
            nice=args.nice,
        )

    if args.command == "forget" and not args.confirm:
        # Refused here, in the CLI's words: the service's refusal names the API's `confirm=true`.
        raise ConfirmationRequired(
            "forget deletes a memory for good: run it again with --confirm. Old memories fade on their own; "
            "forget only what is wrong or harmful."
        )
    home = derive_scope(Path.cwd())
    if args.command in CLIENT_COMMANDS and (url := server_for(settings)) is not None:
        return _through(Remote(url, token=settings.token, scope=home), args)

    from hivemem.audit_schemas import AuditRequest
    from hivemem.limits import Limits
    from hivemem.schemas import MemoryCreate, PromoteRequest, RecallRequest, SleepRequest, request_schemas

    schemas = request_schemas(Limits())
    request: MemoryCreate | None = None
    recall: RecallRequest | None = None
    sleep_request: SleepRequest | None = None
    if args.command == "memorize":
        request = schemas.memory_create.model_validate(_given(_memorize_body(args)))
    elif args.command == "remember":
        recall = schemas.recall.model_validate(_given(_recall_body(args)))
    elif args.command == "sleep" or (args.command == "memory" and args.memory_command == "sleep-consolidate"):
        sleep_request = SleepRequest(
            scope=args.scope,
            threshold=args.threshold,
            min_size=args.min_size,
            dry_run=args.dry_run,
            archive=args.command == "sleep",
        )

    from api.services.caller import Caller
    from api.services.memories import MemoryService

    caller = Caller(principal="cli", default_scope=home)
    service = MemoryService.from_settings(settings, lazy_model=True)
    try:
        if request is not None:
            stored = service.memorize(request, caller).model_dump(mode="json")
            if not settings.broker_url:
                # The job ran in this process and ended with it: no one could look its id up.
                stored.pop("job_id", None)
            _print_json(stored)
        elif recall is not None:
            answer = service.remember(recall, caller).model_dump(mode="json", exclude_none=True)
            _print_recall(answer, as_json=args.json)
        elif args.command == "get":
            _print_json(service.get(args.id, caller, scope=args.scope).model_dump(mode="json"))
        elif args.command == "forget":
            removed = service.forget(args.id, confirm=args.confirm, caller=caller, scope=args.scope)
            print(f"forgot {removed.id}: {removed.title}")
        elif args.command == "memory" and args.memory_command == "audit":
            trail = service.audit(AuditRequest(memory_id=args.id, scope=args.scope), caller)
            _print_json([e.model_dump(mode="json") for e in trail])
        elif args.command == "memory" and args.memory_command == "promote":
            promoted = service.promote(args.id, PromoteRequest(to=args.to), caller, scope=args.scope)
            _print_json(promoted.model_dump(mode="json"))
        elif args.command == "memory" and args.memory_command == "consolidate":
            plan = service.consolidate_goal(args.goal_id, caller, scope=args.scope)
            _print_json(None if plan is None else plan.model_dump(mode="json"))
        elif sleep_request is not None:
            _print_json(service.sleep(sleep_request, caller).model_dump(mode="json"))
        elif args.command == "memory":
            done = service.undo(args.audit_id, caller)
            print(f"undid {done.action} {done.audit_id}: restored {', '.join(done.restored)}")
    finally:
        service.close()
    return 0


def _bench_suite() -> ModuleType | None:
    """The benchmark suite's commands (``bench/suite/cli.py``), there in a clone of the repository;
    None in an installed wheel, which carries no benchmark. From a clone installed in editable mode
    the console script does not see the clone's root on ``sys.path``: it is added."""
    try:
        return importlib.import_module("bench.suite.cli")
    except ModuleNotFoundError as exc:
        if exc.name not in ("bench", "bench.suite", "bench.suite.cli"):
            raise
    clone = Path(__file__).resolve().parents[2]
    if not (clone / "bench" / "suite" / "cli.py").is_file():
        return None
    sys.path.insert(0, str(clone))
    return importlib.import_module("bench.suite.cli")


def _add_bench_parser(sub: Any) -> None:
    suite = _bench_suite()
    if suite is not None:
        suite.add_parser(sub)
        return
    bench = sub.add_parser("bench", help="benchmarks (run from a clone of the repository)")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="the benchmark and its flags")


def _bench(args: argparse.Namespace, settings: Settings) -> int:
    suite = _bench_suite()
    if suite is None:
        print(
            "error: hivemem bench runs from a clone of hivemem's repository (the benchmarks are not part of "
            "the installed package): clone it, `pip install -e '.[dev]'` there, and run hivemem bench in it",
            file=sys.stderr,
        )
        return 2
    code: int = suite.run(args, settings)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hivemem`` console script."""
    args = _parser().parse_args(argv)
    # pydantic is imported by the settings already; its names are taken here so that the CLI's
    # own imports stay few (a call through a server is mostly its imports).
    import pydantic

    try:
        settings = Settings()
        code = _run(args, settings)
        sys.stdout.flush()  # a reader that went away shows here, where it is handled, not at exit
        return code
    except pydantic.ValidationError as exc:
        from hivemem.answers import describe_errors

        print(f"error: {describe_errors(exc.errors())}", file=sys.stderr)  # type: ignore[arg-type]
        return 2
    except HivememError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except UnicodeEncodeError as exc:
        # Bytes that are not UTF-8, in an argument or a file name, reach Python as lone surrogates;
        # no store, query or output can take them. Shown with them replaced, so this line prints.
        shown = exc.object.encode("utf-8", "replace").decode("utf-8") if isinstance(exc.object, str) else ""
        print(f"error: not valid UTF-8 text: {shown!r} (an argument or a file name holds other bytes)", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`hivemem memories list | head`): what it wanted was written. Point
        # stdout at nothing so the interpreter's final flush does not fail again, and exit as a
        # process killed by SIGPIPE would (128 + 13), as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        # A file the command was given or needs cannot be read or written (permissions, a full
        # disk): say which and why, not a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
