"""docs/settings.md, made from the settings class itself: one row per setting, its variable, its
default and its description, in the order the class declares them.

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

from hivemem.config import Settings

PAGE = Path(__file__).resolve().parents[1] / "docs" / "settings.md"
MARK = "<!-- The table below is generated from hivemem/config.py: python -m tests.settings_page --write -->"

INTRO = """# Settings

Environment variables `HIVEMEM_*`, or the same names in lower case without the prefix in a TOML file
(`HIVEMEM_CONFIG`, default `~/.config/hivemem/config.toml`). The environment wins over the file.
`hivemem config` prints the settings in force, and the store they resolve to.
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


def table() -> str:
    """The generated part of the page."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        rows.append(f"| `HIVEMEM_{name.upper()}` | {_default(field)} | {_cell(field.description or '')} |")
    return "\n".join(rows) + "\n"


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
