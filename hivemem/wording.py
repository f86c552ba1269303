"""How hivemem words a count in what it prints and says: "1 memory", "3 memories"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, in the plural (``plural``, else ``noun`` + s) unless it is one:
    "1 document", "3 documents", "1 memory", "0 memories"."""
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"
