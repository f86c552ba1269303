"""``hivemem token create|list|revoke``: the team server's tokens, from the server's own machine.

The CLI is the trusted local caller: whoever can run it there can read the store's files anyway.
A new token is printed once; the store keeps only its keyed hash.
"""

from __future__ import annotations

import argparse
import json
import sys

from api.cli.opened import opened_service
from api.local_token import LOCAL_PRINCIPAL, LOCAL_TOKEN_FILE, ensure_local_token
from hivemem.config import Settings, redact_url

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("token",)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``token create|list|revoke`` to the ``hivemem`` subcommands."""
    token = sub.add_parser("token", help="create, list and revoke the team server's tokens")
    commands = token.add_subparsers(dest="token_command", required=True)
    create = commands.add_parser("create", help="a new token for a principal; printed once, stored hashed")
    create.add_argument("name", help="who it is for (lower-case letters, digits, . _ -); owns scope user/NAME")
    create.add_argument(
        "--grant",
        dest="grants",
        action="append",
        default=[],
        metavar="PATTERN:ROLE",
        help="a role (read, write, admin) on the scopes a glob matches, e.g. 'github.com/acme/*:write'; "
        "'(global):read' for the global scope, '*:admin' for everything and token admin; repeatable",
    )
    create.add_argument("--expires", type=float, default=None, metavar="DAYS", help="days until it stops working")
    commands.add_parser("list", help="every token's record (never the token), revoked ones included")
    revoke = commands.add_parser("revoke", help="revoke a token: refused from the next request on")
    revoke.add_argument("id", help="the token's id (the 12 hex characters after hm_)")


def _notes(settings: Settings, *, first: bool, granted: bool, personal: str, local_made: bool) -> list[str]:
    """What a new token changes that its creator may not expect."""
    notes = []
    if local_made:
        notes.append(
            f"this machine's CLI and hooks keep working: they send the token made for it in "
            f"{settings.data_dir / LOCAL_TOKEN_FILE} (principal {LOCAL_PRINCIPAL}, owner-only) to the local server"
        )
    if first and not settings.team and not settings.trust_loopback:
        # The embedded laptop server let every local client in until now.
        notes.append(
            "this store had no token: from now on its server asks every HTTP client (REST, MCP over "
            "HTTP, the dashboard) for one, loopback included; HIVEMEM_TRUST_LOOPBACK=true lets local clients "
            "in without"
        )
    if not granted:
        notes.append(f"no --grant: this token may use only its own scope {personal}")
    return notes


def run(args: argparse.Namespace, settings: Settings) -> int:
    from api.services.caller import Caller
    from hivemem.token_schemas import TokenCreate

    caller = Caller(principal="cli")
    with opened_service(settings) as service:
        # Tokens live in the store: one command against another data folder than the server's makes
        # a token that server never sees. Say which store this is.
        print(f"store: {redact_url(settings.resolved_store_url())}", file=sys.stderr)
        if args.token_command == "create":
            request = TokenCreate(name=args.name, grants=args.grants, expires_in_days=args.expires)
            first = not service.tokens.list(caller)  # the server asks for tokens once any exists
            issued = service.tokens.create(request, caller)
            local_made = ensure_local_token(service.tokens, settings)
            print(json.dumps(issued.model_dump(mode="json", exclude={"token"}), indent=2))
            print(f"\ntoken (shown once, keep it secret):\n{issued.token}")
            notes = _notes(
                settings, first=first, granted=bool(args.grants), personal=issued.personal_scope, local_made=local_made
            )
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
        elif args.token_command == "list":
            print(json.dumps([t.model_dump(mode="json") for t in service.tokens.list(caller)], indent=2))
        else:
            print(json.dumps(service.tokens.revoke(args.id, caller).model_dump(mode="json"), indent=2))
    return 0
