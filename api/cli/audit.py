"""``hivemem audit``: read the audit log from the server's machine, newest first, as JSON lines.

The CLI is the trusted local caller (whoever can run it there can read the store's files anyway), so
it reads the whole log; the same query over HTTP is ``GET /v1/audit`` and takes admin on ``*``.
"""

from __future__ import annotations

import argparse
import json
from typing import get_args

from api.cli.moments import MOMENT_HELP, moment
from api.cli.opened import opened_service
from hivemem.audit import MAX_AUDIT_LIMIT, AuditAction
from hivemem.config import Settings

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("audit",)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``audit`` to the ``hivemem`` subcommands."""
    audit = sub.add_parser(
        "audit", help="the audit log, newest first: forgets, merges, undos, token changes, denied requests, …"
    )
    audit.add_argument(
        "--memory", dest="memory_id", default=None, metavar="ID", help="one memory's (or token's) records"
    )
    audit.add_argument("--scope", default=None, help="only records of this scope")
    audit.add_argument(
        "--action", dest="actions", action="append", choices=get_args(AuditAction), help="only this action (repeatable)"
    )
    audit.add_argument("--principal", default=None, help="only what this principal did or was refused")
    audit.add_argument(
        "--since", default=None, type=moment, metavar="WHEN", help=f"records at or after ({MOMENT_HELP})"
    )
    audit.add_argument("--until", default=None, type=moment, metavar="WHEN", help="records before")
    audit.add_argument("--limit", type=int, default=100, help=f"at most this many (1-{MAX_AUDIT_LIMIT})")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from api.services.caller import Caller
    from hivemem.audit_schemas import AuditRequest

    request = AuditRequest.model_validate(
        {
            "memory_id": args.memory_id,
            "scope": args.scope,
            "action": args.actions,
            "principal": args.principal,
            "since": args.since,
            "until": args.until,
            "limit": args.limit,
        }
    )
    with opened_service(settings) as service:
        for record in service.audit_trail.search(request, Caller(principal="cli")):
            print(json.dumps(record.model_dump(mode="json"), sort_keys=True))
    return 0
