"""``hivemem memory list|update|verify`` (``memories`` is the same group): an operator's view of the
stored memories. The group's ``show`` is ``hivemem get`` under another name (:mod:`api.cli.memory`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from api.cli.moments import MOMENT_HELP, moment
from api.cli.opened import opened_service
from hivemem.config import Settings
from hivemem.model import MemoryState, MemoryType
from hivemem.scope import derive_scope

__all__ = ["SUBCOMMANDS", "add_subcommands", "run"]

# What run() answers; the group's `show` is parsed here too, and answered as `hivemem get` (api/cli/memory.py).
SUBCOMMANDS = ("list", "update", "verify")

_SCOPE_HELP = "the scope (default: derived from the working directory; '' is global)"


def add_subcommands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``list``, ``show`` and ``update`` to the ``memory`` group's subcommands."""
    listing = commands.add_parser("list", help="a page of a scope's memories, newest first, every state")
    listing.add_argument("--scope", default=None, help=_SCOPE_HELP)
    listing.add_argument("--type", dest="memory_type", choices=[t.value for t in MemoryType], help="only this type")
    listing.add_argument("--state", choices=[s.value for s in MemoryState], help="only this state")
    listing.add_argument("--tag", default=None, help="only memories with this tag")
    listing.add_argument("--author", default=None, help="only memories this principal wrote")
    listing.add_argument(
        "--after", default=None, type=moment, metavar="WHEN", help=f"created at or after ({MOMENT_HELP})"
    )
    listing.add_argument("--before", default=None, type=moment, metavar="WHEN", help="created before")
    listing.add_argument("--limit", type=int, default=50, help="memories per page")
    listing.add_argument("--cursor", default=None, help="the next_cursor a previous page printed")
    show = commands.add_parser("show", help="one memory with its relations (the same as hivemem get)")
    show.add_argument("id", help="the memory's id")
    show.add_argument("--scope", default=None, help=_SCOPE_HELP)
    verify = commands.add_parser("verify", help="say a memory still holds (clears its stale label)")
    verify.add_argument("id", help="the memory's id")
    verify.add_argument("--scope", default=None, help=_SCOPE_HELP)
    update = commands.add_parser("update", help="edit a memory (a new title or content is embedded again)")
    update.add_argument("id", help="the memory's id")
    update.add_argument("--scope", default=None, help=_SCOPE_HELP)
    update.add_argument("--title", default=None, help="the new title")
    update.add_argument("--content", default=None, help="the new content")
    update.add_argument("--importance", type=float, default=None, help="the new importance, 0-1")
    update.add_argument("--tag", dest="tags", action="append", default=None, help="the new tags (repeatable; replaces)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from api.services.caller import Caller
    from hivemem.listing_schemas import CreatedWindow, MemoryUpdate

    caller = Caller(principal="cli", default_scope=derive_scope(Path.cwd()))
    change = None
    if args.memory_command == "update":
        fields = {
            k: getattr(args, k) for k in ("title", "content", "importance", "tags") if getattr(args, k) is not None
        }
        change = MemoryUpdate.model_validate(fields)
    window = CreatedWindow.model_validate(
        {"created_after": getattr(args, "after", None), "created_before": getattr(args, "before", None)}
    )
    with opened_service(settings) as service:
        if args.memory_command == "list":
            page = service.operators.page(
                caller,
                scope=args.scope,
                memory_type=None if args.memory_type is None else MemoryType(args.memory_type),
                state=None if args.state is None else MemoryState(args.state),
                tag=args.tag,
                author=args.author,
                created_after=window.created_after,
                created_before=window.created_before,
                limit=args.limit,
                cursor=args.cursor,
            )
            result = page.model_dump(mode="json")
        elif args.memory_command == "verify":
            result = service.operators.verify(args.id, caller, scope=args.scope).model_dump(mode="json")
        else:
            assert change is not None
            edited, redacted = service.operators.update(args.id, change, caller, scope=args.scope)
            for r in redacted:
                print(f"redacted: a credential ({r.kind}) in {r.field}", file=sys.stderr)
            result = edited.model_dump(mode="json")
        print(json.dumps(result, indent=2))
    return 0
