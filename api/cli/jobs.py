"""``hivemem jobs``: background jobs (memorize, bulk, ingest, re-embed) with their progress.

Jobs live where they run: a running server answers for its own (``GET /v1/jobs``); without one,
the distributed shape's board is read from Redis directly. The embedded shape keeps its jobs in the
server's memory, so with no server running there are none to show. No model is loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from api.cli.client import Remote, server_for
from api.local_token import client_token
from hivemem.config import Settings

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("jobs",)

_STATES = ("queued", "running", "done", "failed")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``jobs`` to the ``hivemem`` subcommands."""
    jobs = sub.add_parser("jobs", help="background jobs, newest first, with their progress (or one job, whole)")
    jobs.add_argument("id", nargs="?", default=None, help="one job's id: print it whole, with its result")
    jobs.add_argument("--state", choices=_STATES, default=None, help="only jobs in this state")
    jobs.add_argument("--limit", type=int, default=20, help="at most this many (1-1000, default 20)")
    jobs.add_argument("--json", action="store_true", help="print JSON lines instead of a table")


def _line(job: dict[str, Any]) -> str:
    error = f"  {job['error']}" if job.get("error") else ""
    return (
        f"{job['id']}  {job['kind']:<13} {job['state']:<8} {job['done']:>5}/{job['total']:<5} "
        f"{job['created_at']}{error}"
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.limit <= 1000:
        print("error: --limit must be 1-1000", file=sys.stderr)
        return 2
    url = server_for(settings)
    if url is not None:
        remote = Remote(url, token=client_token(settings, url), scope=None)
        params = {"limit": str(args.limit)} | ({} if args.state is None else {"state": args.state})
        found = [remote.job(args.id)] if args.id else remote.jobs(params)
    elif settings.broker_url:
        found = _from_board(args, settings.broker_url)
    else:
        print(
            "no server is running: in the embedded shape jobs live in the server's memory "
            "(start one with hivemem serve)",
            file=sys.stderr,
        )
        return 1 if args.id else 0
    for job in found:
        print(json.dumps(job, sort_keys=True) if args.json or args.id else _line(job))
    return 0


def _from_board(args: argparse.Namespace, broker_url: str) -> list[dict[str, Any]]:
    from hivemem.answers import JobPublic
    from hivemem.jobs import JobState
    from workers.job_board import RedisJobBoard

    board = RedisJobBoard.from_url(broker_url)
    if args.id:
        return [JobPublic.of(board.get(args.id)).model_dump(mode="json")]
    state = None if args.state is None else JobState(args.state)
    return [JobPublic.of(job).model_dump(mode="json") for job in board.recent(args.limit, state)]
