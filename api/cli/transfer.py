"""``hivemem export`` and ``hivemem import``: a store's memories and knowledge as JSON lines, and back.

``hivemem export [--scope S]… > memories.jsonl`` writes every scope (or those named);
``hivemem import memories.jsonl`` reads one into the configured store (SQLite or OpenSearch), so
moving between the two stores is an export from one and an import into the other.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from api.cli.opened import opened_service
from hivemem.config import Settings
from hivemem.errors import ValidationError

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("export", "import")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``export`` and ``import`` to the ``hivemem`` subcommands."""
    export = sub.add_parser("export", help="write memories, relations and knowledge as JSON lines (to stdout)")
    export.add_argument(
        "--scope", dest="scopes", action="append", default=None, help="a scope to export (repeatable; default: all)"
    )
    export.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")
    imported = sub.add_parser("import", help="read an export file into this store (re-embedding with its model)")
    imported.add_argument("file", help="the export file ('-' for stdin)")


def _export_file(name: str, spool: Path) -> Path:
    """The export file to read, checked before the store is opened; standard input (``-``) is
    copied into ``spool`` first, as the import reads the file twice."""
    if name == "-":
        with spool.open("wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out)
        return spool
    path = Path(name)
    if path.is_dir():
        raise ValidationError(f"{name} is a folder; give the export file", field="file")
    if not path.is_file():
        raise ValidationError(f"{name}: no such file", field="file")
    return path


def _reader(path: Path, name: str) -> Callable[[], Iterator[str]]:
    """Read ``path`` line by line from the start, each time it is called."""

    def lines() -> Iterator[str]:
        try:
            # Line feeds only, as hivemem.transfer.export_file_lines splits a file held as text.
            with path.open(encoding="utf-8", newline="\n") as text:
                for line in text:
                    yield line.rstrip("\r\n")
        except UnicodeDecodeError:
            raise ValidationError(f"{name} is not UTF-8 text: not an export file", field="file") from None

    return lines


def _output(name: str) -> Path:
    """The export file to write, checked before the store is opened: a folder, or a file in no
    folder, is refused with nothing done."""
    path = Path(name)
    if path.is_dir():
        raise ValidationError(f"{name} is a folder; give the export file's name", field="output")
    if not path.parent.is_dir():
        raise ValidationError(f"{name}: no folder {path.parent} to write it in", field="output")
    return path


def _write_whole(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` to ``path`` as a whole: into a file beside it, renamed over it at the end,
    so an export that fails halfway leaves no half file under the name asked for. A name that is
    no regular file (``/dev/stdout``, a pipe) is written to as it is: it cannot be replaced."""
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
        return
    partial = path.with_name(f".{path.name}.partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
        os.replace(partial, path)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc  # named as the caller named it
    finally:
        partial.unlink(missing_ok=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from api.services.caller import Caller

    caller = Caller(principal="cli")
    with tempfile.TemporaryDirectory(prefix="hivemem-import-") as spool:
        source = _export_file(args.file, Path(spool) / "stdin.jsonl") if args.command == "import" else None
        output = _output(args.output) if args.command == "export" and args.output is not None else None
        with opened_service(settings) as service:
            if source is None:
                exported = service.transfer.export(caller, args.scopes)
                if output is None:
                    for line in exported:
                        sys.stdout.write(line + "\n")
                else:
                    _write_whole(output, exported)
            else:
                result = service.transfer.import_lines(_reader(source, args.file), caller)
                print(json.dumps(result.model_dump(), indent=2))
    return 0
