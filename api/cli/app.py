"""The ``hivemem`` command line: the parser of every command group, and the dispatch to each
(``hivemem --help`` lists them; tests/surface/cli_commands.json keeps every command and option)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from api.cli import (
    audit,
    config,
    doctor,
    hook,
    jobs,
    knowledge,
    memory,
    opensearch,
    reembed,
    serving,
    setup,
    tokens,
    transfer,
)
from hivemem.config import Settings
from hivemem.errors import HivememError

__all__ = ["HELP_SECTIONS", "main"]


# What `hivemem --help` lists, by what each command is for; every command stands in one section.
HELP_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("run hivemem", ("serve", "mcp", "worker", "beat")),
    ("memories", ("memorize", "remember", "get", "forget", "memory", "sleep", "audit", "jobs")),
    ("documents", ("knowledge",)),
    ("move and share", ("export", "import", "token")),
    ("connect an agent", ("setup", "hook")),
    ("operate", ("doctor", "config", "opensearch", "reembed", "bench")),
)


class _SectionedParser(argparse.ArgumentParser):
    """The top-level parser, whose help lists the commands in :data:`HELP_SECTIONS` rather than as
    one list of two dozen."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        commands = next(a for a in self._actions if isinstance(a, argparse._SubParsersAction))
        by_name = {choice.dest: choice for choice in commands._choices_actions}
        for title, names in HELP_SECTIONS:
            formatter.start_section(title)
            formatter.add_arguments([by_name[name] for name in names])
            formatter.end_section()
        formatter.start_section(self._optionals.title)
        formatter.add_arguments(self._optionals._group_actions)
        formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def _parser() -> argparse.ArgumentParser:
    parser = _SectionedParser(
        prog="hivemem",
        description="Team-shared long-term memory for AI agents.",
        epilog="`hivemem COMMAND --help` gives a command's options; docs/cli.md has them all.",
    )
    # The commands' own parsers list their options as argparse does (they would take this class).
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser)
    for group in _GROUPS:
        group.add_parser(sub)
    _add_bench_parser(sub)
    return parser


def _run(args: argparse.Namespace, settings: Settings) -> int:
    return _HANDLERS[args.command](args, settings)


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


class _Group(Protocol):
    """A command group's module: its commands, the function that adds their parsers, and the one
    that runs them."""

    @property
    def COMMANDS(self) -> tuple[str, ...]: ...

    @property
    def add_parser(self) -> Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]: ...

    @property
    def run(self) -> Callable[[argparse.Namespace, Settings], int]: ...


# Every command group of the CLI; `hivemem --help` lists their commands by HELP_SECTIONS.
_GROUPS: tuple[_Group, ...] = (
    serving,
    memory,
    knowledge,
    audit,
    jobs,
    transfer,
    tokens,
    setup,
    hook,
    doctor,
    opensearch,
    reembed,
    config,
)
_HANDLERS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    **{command: group.run for group in _GROUPS for command in group.COMMANDS},
    "bench": _bench,
}


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
