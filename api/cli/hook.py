"""``hivemem hook EVENT``: what an agent's client runs on its events (:mod:`api.hooks`).

``hivemem`` hands a hook call to :mod:`api.hooks.command` before it imports the rest of the CLI;
this group puts the command in ``hivemem --help`` and answers ``hivemem hook --help``.
"""

from __future__ import annotations

import argparse

from api.hooks.command import add_arguments
from hivemem.config import Settings

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("hook",)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``hook`` to the ``hivemem`` subcommands."""
    hook = sub.add_parser(
        "hook",
        help="answer a client hook (JSON on stdin): session briefing, relevant memories, handoff reminder",
        description="Answer one client event: reads the client's JSON on stdin, asks the running server, "
        "and prints what the client injects. Exits 0 with nothing printed when anything fails.",
    )
    add_arguments(hook)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from api.hooks.command import main

    argv = [args.event] + ([] if args.min_similarity is None else ["--min-similarity", str(args.min_similarity)])
    argv += [] if args.url is None else ["--url", args.url]
    argv += [] if args.scope is None else ["--scope", args.scope]
    return main(argv)
