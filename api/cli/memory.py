"""``hivemem memorize``, ``remember``, ``get``, ``forget``, ``sleep``, and the ``memory`` group
(also named ``memories``): ``list``, ``show``, ``update``, ``audit``, ``promote``, ``undo``,
``consolidate``, ``sleep-consolidate``. ``memorize``, ``remember``, ``get`` (``memory show``) and ``forget`` go
through a running server when there is one (:mod:`api.cli.client`); the rest, and those without a
server, open the store in this process."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.cli import memories
from api.cli.client import CLIENT_COMMANDS, Remote, server_for
from api.cli.moments import MOMENT_HELP, moment
from api.cli.opened import opened_service
from api.cli.text import indented
from api.local_token import client_token
from hivemem.config import Settings
from hivemem.errors import ConfirmationRequired
from hivemem.model import GLOBAL_SCOPE, MemoryType, Source
from hivemem.scope import derive_scope

if TYPE_CHECKING:
    from api.services.caller import Caller
    from api.services.memories import MemoryService

__all__ = ["COMMANDS", "add_parser", "print_json", "run"]

COMMANDS = ("memorize", "remember", "get", "forget", "memory", "memories", "sleep")


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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the memory commands to the ``hivemem`` subcommands."""
    _add_memorize(sub)
    _add_remember(sub)
    _add_get_and_forget(sub)
    _add_memory(sub)


def _add_memorize(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    memorize.add_argument("--json", action="store_true", help="print the whole answer as JSON (default: what was done)")


def _add_remember(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        "--exclude-stale",
        action="store_true",
        help="leave out facts, progress notes and failures not verified for longer than their type holds",
    )
    remember.add_argument(
        "--after", default=None, type=moment, metavar="WHEN", help=f"only memories created at or after ({MOMENT_HELP})"
    )
    remember.add_argument("--before", default=None, type=moment, metavar="WHEN", help="only memories created before")
    remember.add_argument("--json", action="store_true", help="print JSON")


def _add_get_and_forget(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    get = sub.add_parser("get", help="show one memory (of this project's scope, or global)")
    get.add_argument("id", help="the memory's id")
    get.add_argument("--scope", default=None, help="the memory's scope (default: derived from the working directory)")

    forget = sub.add_parser(
        "forget", help="delete a memory for good, or (without ID) every match of a query or filters after a preview"
    )
    forget.add_argument("id", nargs="?", default=None, help="the memory's id (leave out to forget in bulk)")
    forget.add_argument("--confirm", action="store_true", help="required: forgetting cannot be undone")
    forget.add_argument(
        "--scope", default=None, help="the memory's scope (default: derived from the working directory)"
    )
    bulk = forget.add_argument_group("in bulk (no ID): a dry run first, then --confirm --token TOKEN")
    bulk.add_argument("--query", default=None, help="the best matches of this query, by meaning")
    bulk.add_argument("--type", dest="memory_types", action="append", default=None, help="only this type (repeatable)")
    bulk.add_argument("--tag", dest="tags", action="append", default=None, help="only with this tag (repeatable)")
    bulk.add_argument("--state", dest="states", action="append", default=None, help="only in this state (repeatable)")
    bulk.add_argument("--author", default=None, help="only what this principal wrote")
    bulk.add_argument("--after", default=None, type=moment, metavar="WHEN", help="created at or after")
    bulk.add_argument("--before", default=None, type=moment, metavar="WHEN", help="created before")
    bulk.add_argument("--limit", type=int, default=None, help="with --query: how many of its best matches (20)")
    bulk.add_argument("--token", default=None, help="the preview_token the dry run printed")


def _add_memory(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # One group for what is done to stored memories; `memories` is its older name, still accepted.
    memory = sub.add_parser(
        "memory", aliases=["memories"], help="list, show and edit memories; audit trail, undo, consolidation"
    )
    memory_sub = memory.add_subparsers(dest="memory_command", required=True)
    memories.add_subcommands(memory_sub)
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


def print_json(value: object) -> None:
    print(json.dumps(value, indent=2, default=str))


def _print_memorized(answer: dict[str, Any], *, as_json: bool) -> None:
    """A memorize's answer: the sentence saying what was done (and what was redacted), or its JSON."""
    if as_json:
        print_json(answer)
        return
    if "said" not in answer:  # 202: the job is still running
        print(f"accepted as memory {answer['id']}; job {answer['job_id']} is {answer.get('state', 'queued')}")
        return
    print(answer["said"])
    for redaction in answer.get("redacted") or []:
        print(f"redacted a {redaction['kind']} in {redaction['field']} before storing it")


def _print_recall(response: dict[str, Any], *, as_json: bool) -> None:
    """A recall's answer (``RecallResponse`` as JSON): all of it, or a line and the content per result."""
    if as_json:
        print_json(response)
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
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="cosine to a cluster's seed (default: the model's same-fact band, 0.85 for MiniLM)",
    )
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
        "exclude_stale": args.exclude_stale or None,
    }


def _given(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the options left out (a field left out takes its default)."""
    return {k: v for k, v in body.items() if v is not None}


def _through(remote: Remote, args: argparse.Namespace) -> int:
    """Run a client command on the server (:mod:`api.cli.client`), printing what the in-process one does.
    Nothing here imports a request schema: the server validates, and a CLI call is mostly its imports."""
    if args.command == "memorize":
        _print_memorized(
            remote.memorize({k: v for k, v in _memorize_body(args).items() if v is not None}), as_json=args.json
        )
    elif args.command == "remember":
        _print_recall(
            remote.remember({k: v for k, v in _recall_body(args).items() if v is not None}), as_json=args.json
        )
    elif args.command == "get":
        print_json(remote.get(args.id, args.scope))
    elif args.id is None:
        print_json(remote.forget_matching(_given(_bulk_forget_body(args))))
    else:
        removed = remote.forget(args.id, confirm=args.confirm, scope=args.scope)
        print(f"forgot {removed['id']}: {removed['title']}")
    return 0


def _bulk_forget_body(args: argparse.Namespace) -> dict[str, Any]:
    """``POST /v1/memories/forget``'s body from the command line."""
    return {
        "query": args.query,
        "scope": args.scope,
        "memory_types": args.memory_types,
        "tags": args.tags,
        "states": args.states,
        "author": args.author,
        "created_after": args.after,
        "created_before": args.before,
        "limit": args.limit,
        "confirm": args.confirm,
        "preview_token": args.token,
    }


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run one memory command: through the running server when it is a client command and one
    answers, else on the store in this process."""
    if args.command == "forget" and args.id is not None and not args.confirm:
        # Refused here, in the CLI's words: the service's refusal names the API's `confirm=true`.
        raise ConfirmationRequired(
            "forget deletes a memory for good: run it again with --confirm. Old memories fade on their own; "
            "forget only what is wrong or harmful."
        )
    if args.command in ("memory", "memories") and args.memory_command in memories.SUBCOMMANDS:
        return memories.run(args, settings)
    if args.command in ("memory", "memories") and args.memory_command == "show":
        args.command = "get"  # one command under two names
    home = derive_scope(Path.cwd())
    if args.command in CLIENT_COMMANDS and (url := server_for(settings)) is not None:
        return _through(Remote(url, token=client_token(settings, url), scope=home), args)
    from api.services.caller import Caller

    request = _request(args)  # validated before the store opens: a bad one changes nothing
    caller = Caller(principal="cli", default_scope=home)
    with opened_service(settings) as service:
        command = f"memory {args.memory_command}" if args.command in ("memory", "memories") else args.command
        _HANDLERS[command](service, args, caller, request)
    return 0


def _request(args: argparse.Namespace) -> object:
    """The validated request of ``memorize``, ``remember`` and the sleep commands; None for the rest."""
    from hivemem.schemas import MemoryCreate, RecallRequest, SleepRequest

    if args.command == "memorize":
        return MemoryCreate.model_validate(_given(_memorize_body(args)))
    if args.command == "remember":
        return RecallRequest.model_validate(_given(_recall_body(args)))
    if args.command == "forget" and args.id is None:
        from hivemem.forget_schemas import BulkForgetRequest

        return BulkForgetRequest.model_validate(_given(_bulk_forget_body(args)))
    if args.command == "sleep" or getattr(args, "memory_command", None) == "sleep-consolidate":
        archive = args.command == "sleep"
        return SleepRequest(
            scope=args.scope, threshold=args.threshold, min_size=args.min_size, dry_run=args.dry_run, archive=archive
        )
    return None


def _memorize(service: MemoryService, args: argparse.Namespace, caller: Caller, request: Any) -> None:
    stored = service.memorize(request, caller).model_dump(mode="json")
    if not service.settings.broker_url:
        # The job ran in this process and ended with it: no one could look its id up.
        stored.pop("job_id", None)
    _print_memorized(stored, as_json=args.json)


def _remember(service: MemoryService, args: argparse.Namespace, caller: Caller, request: Any) -> None:
    _print_recall(service.remember(request, caller).model_dump(mode="json", exclude_none=True), as_json=args.json)


def _get(service: MemoryService, args: argparse.Namespace, caller: Caller, _: object) -> None:
    print_json(service.get(args.id, caller, scope=args.scope).model_dump(mode="json"))


def _forget(service: MemoryService, args: argparse.Namespace, caller: Caller, request: object) -> None:
    if args.id is None:
        from hivemem.forget_schemas import BulkForgetRequest

        assert isinstance(request, BulkForgetRequest)
        print_json(service.forget_matching(request, caller).model_dump(mode="json"))
        return
    removed = service.forget(args.id, confirm=args.confirm, caller=caller, scope=args.scope)
    print(f"forgot {removed.id}: {removed.title}")


def _audit(service: MemoryService, args: argparse.Namespace, caller: Caller, _: object) -> None:
    from hivemem.audit_schemas import AuditRequest

    trail = service.audit_trail.search(AuditRequest(memory_id=args.id, scope=args.scope), caller)
    print_json([e.model_dump(mode="json") for e in trail])


def _promote(service: MemoryService, args: argparse.Namespace, caller: Caller, _: object) -> None:
    from hivemem.schemas import PromoteRequest

    print_json(service.promote(args.id, PromoteRequest(to=args.to), caller, scope=args.scope).model_dump(mode="json"))


def _consolidate(service: MemoryService, args: argparse.Namespace, caller: Caller, _: object) -> None:
    plan = service.lifecycle.consolidate_goal(args.goal_id, caller, scope=args.scope)
    print_json(None if plan is None else plan.model_dump(mode="json"))


def _sleep(service: MemoryService, args: argparse.Namespace, caller: Caller, request: Any) -> None:
    print_json(service.lifecycle.sleep(request, caller).model_dump(mode="json"))


def _undo(service: MemoryService, args: argparse.Namespace, caller: Caller, _: object) -> None:
    done = service.audit_trail.undo(args.audit_id, caller)
    print(f"undid {done.action} {done.audit_id}: restored {', '.join(done.restored)}")


_HANDLERS = {
    "memorize": _memorize,
    "remember": _remember,
    "get": _get,
    "forget": _forget,
    "memory audit": _audit,
    "memory promote": _promote,
    "memory undo": _undo,
    "memory consolidate": _consolidate,
    "memory sleep-consolidate": _sleep,
    "sleep": _sleep,
}
