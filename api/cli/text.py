"""How the CLI prints a memory's content or a document's passage under its heading line."""

from __future__ import annotations

__all__ = ["indented"]

INDENT = "    "


def indented(text: str, limit: int | None = None) -> str:
    """``text`` with every line indented under the line above it (a passage's later lines too, so
    that it never reads as the next result), cut after ``limit`` characters with an ellipsis, and
    runs of blank lines kept to one."""
    text = text.strip()
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + " …"
    lines: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(INDENT + line if line else "")
    return "\n".join(lines)
