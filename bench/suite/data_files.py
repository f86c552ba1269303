"""Reading a benchmark's data files: a file that is not what its benchmark reads (not JSON, a
record without a field the benchmark needs, another data set's file) is one clear error that
names the file, not a traceback from deep inside the loader."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hivemem.errors import ValidationError

__all__ = ["json_lines", "reading"]


@contextmanager
def reading(path: Path, what: str) -> Iterator[None]:
    """Around the parsing of ``path``: what goes wrong reading it raises ``ValidationError``
    ("PATH is not WHAT: REASON"). ``what`` names the data set ("a LoCoMo file (JSON)")."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not {what}: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path} is not {what}: not UTF-8 text (byte {exc.start})") from exc
    except KeyError as exc:
        raise ValidationError(f"{path} is not {what}: a record has no {exc.args[0]!r}") from exc
    except (TypeError, AttributeError) as exc:
        # A record of another shape: a list where an object was meant, a number where a list was.
        raise ValidationError(f"{path} is not {what}: a record of another shape ({exc})") from exc
    except ValueError as exc:
        raise ValidationError(f"{path} is not {what}: {exc}") from exc


def json_lines(lines: Iterable[str]) -> Iterator[Any]:
    """The records of a JSON-lines file, blank lines skipped; a line that is not JSON raises
    ``ValueError`` with its line number in the file (``reading`` reports it)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number} is not JSON ({exc.msg}, column {exc.colno})") from exc
