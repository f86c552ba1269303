"""``hivemem reembed``: move the store to the configured embedding model now, in the foreground.

A server does the same by itself when it starts on a store of another model (serving the old
vectors meanwhile); this command is for doing it before starting one.
"""

from __future__ import annotations

import argparse

from api.cli.opened import opened_service
from hivemem.config import Settings
from hivemem.errors import JobNotFoundError

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("reembed",)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``reembed`` to the ``hivemem`` subcommands."""
    sub.add_parser("reembed", help="re-embed every memory and chunk with the configured model (after a model change)")


def run(_: argparse.Namespace, settings: Settings) -> int:
    with opened_service(settings, load_model=True) as service:
        try:
            job = service.reembed_job()
        except JobNotFoundError:
            print(f"nothing to do: the store holds {service.store.embedding_model} vectors")
            return 0
        while not job.state.final:
            job = service.wait_for_reembed(timeout_s=1.0)
            print(f"re-embedding: {job.progress:.0%}", flush=True)
        if job.error:
            print(f"re-embedding failed: {job.error}")
            return 1
        print(f"re-embedded with {service.store.embedding_model}: {job.result}")
    return 0
