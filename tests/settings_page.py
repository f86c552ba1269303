"""docs/settings.md, made from the settings classes themselves: the operator settings, then each
group of tuning parameters, one row per field with its variable, its default and its description,
in the order the classes declare them.

``tests/test_docs.py`` fails when the page and the code disagree; after a change of the settings,
write the page again and commit it with the change::

    python -m tests.settings_page --write
"""

from __future__ import annotations

import re
import sys
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from api.settings_catalogue import TUNING_GROUPS
from hivemem.config import Settings

PAGE = Path(__file__).resolve().parents[1] / "docs" / "settings.md"
MARK = "<!-- Generated from the settings classes below: python -m tests.settings_page --write -->"

INTRO = """# Settings

Two kinds of knobs.

- **Operator settings** are what a person deploying hivemem decides: where memories live, the
  broker, the model and its device, the bind, the team and its tokens, request limits, paths, logs.
- **Tuning parameters** are the engine's numbers: fusion weights, vector index sizes, retries,
  chunk lengths. Their defaults are measured (bench/RESULTS.md); change them for an experiment or
  a benchmark, not to get started. Each group lives in the module that uses it.

Both are read from environment variables `HIVEMEM_*`, or from a TOML file (`HIVEMEM_CONFIG`, which
must name a file that is there, else the optional `~/.config/hivemem/config.toml`): operator
settings at its top level, tuning parameters in its `[tuning]` table, each under its name in lower
case without the prefix. The environment wins over the file. `hivemem config` prints the operator
settings in force, the store they resolve to, and the tuning parameters. A top-level key that is no
operator setting is refused by every command; a `[tuning]` key that is no tuning parameter (a
misspelt one), or a tuning value its parameter does not take, by the processes (`serve`, `mcp`,
`worker`, `beat`), by `config` and by every command that opens the store, before anything is opened
or made.

```toml
store_url = "sqlite:///srv/hivemem/hivemem.db"
embed_device = "cuda"

[tuning]
bm25_weight = 0.4
```
"""


def _shown(value: Any) -> str:
    if value is None or value == "" or value == ():
        return "empty"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, tuple | list):
        return f"`{','.join(str(v) for v in value)}`"
    return f"`{value}`"


def _default(field: FieldInfo) -> str:
    if field.default is not PydanticUndefined:
        return _shown(field.default)
    factory = field.default_factory
    # A default made when the settings load (a folder under the user's home) is told by its
    # function's docstring: "Where …: ``$XDG_DATA_HOME/hivemem`` or ``~/.local/share/hivemem``."
    said = (getattr(factory, "__doc__", "") or "").split(": ", 1)[-1].rstrip(".")
    return re.sub(r"``([^`]+)``", r"`\1`", said) or "computed"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(fields: dict[str, FieldInfo]) -> str:
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in fields.items():
        rows.append(f"| `HIVEMEM_{name.upper()}` | {_default(field)} | {_cell(field.description or '')} |")
    return "\n".join(rows) + "\n"


def table() -> str:
    """The generated part of the page: the operator settings, then one section per tuning group."""
    sections = ["## Operator settings\n\n" + _rows(Settings.model_fields)]
    for group in TUNING_GROUPS:
        where = f"`{group.__module__}.{group.__name__}`"
        summary = _cell((group.__doc__ or "").strip().split("\n\n")[0])
        sections.append(f"## Tuning: {group.group_title}\n\n{summary} ({where})\n\n" + _rows(group.model_fields))
    return "\n".join(sections)


def page() -> str:
    """The whole page: the hand-written opening, then the generated table."""
    return f"{INTRO}\n{MARK}\n\n{table()}"


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__, file=sys.stderr)
        return 2
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(page(), encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
