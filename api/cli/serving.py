"""``hivemem serve``, ``mcp``, ``worker`` and ``beat``: the processes that run until stopped."""

from __future__ import annotations

import argparse
import sys
import time

from hivemem.config import Settings, redact_url
from workers.queues import QUEUES

__all__ = ["COMMANDS", "add_parser", "positive_int", "run"]

COMMANDS = ("serve", "mcp", "worker", "beat")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve``, ``mcp``, ``worker`` and ``beat`` to the ``hivemem`` subcommands."""
    serve = sub.add_parser("serve", help="run the HTTP server (REST at /v1, MCP at /mcp)")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8765)")

    mcp = sub.add_parser("mcp", help="run the MCP server on stdio (for Claude Code, Cursor, …)")
    mcp.add_argument("--scope", default=None, help="lock the session to this scope (default: from the working dir)")

    worker = sub.add_parser("worker", help="run a Celery worker of the distributed shape (needs HIVEMEM_BROKER_URL)")
    worker.add_argument("--queues", default=",".join(QUEUES), help=f"comma list (default all: {','.join(QUEUES)})")
    worker.add_argument("--concurrency", type=positive_int, default=None, help="pool processes (default: one per CPU)")
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


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the process ``args.command`` names, until it is stopped."""
    if args.command == "serve":
        started = time.monotonic()
        # Said before the server's own imports (a second or more): a start is never silent.
        print(
            f"hivemem: starting: store {redact_url(settings.resolved_store_url())}, "
            f"model {settings.embed_model or 'all-MiniLM-L6-v2 (the default)'}",
            file=sys.stderr,
            flush=True,
        )
        from api.main import serve
        from api.process.memory import tune_allocator
        from api.settings_catalogue import refuse_invalid_tuning

        refuse_invalid_tuning()

        tune_allocator()
        serve(settings, host=args.host, port=args.port, started=started)
        return 0
    from api.settings_catalogue import refuse_invalid_tuning

    refuse_invalid_tuning()
    if args.command == "mcp":
        from api.mcp.server import run_stdio
        from api.process.memory import tune_allocator

        tune_allocator()
        run_stdio(settings, scope=args.scope)
        return 0
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
