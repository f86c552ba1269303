"""How deep a JSON text nests, found without parsing it.

A parser recurses once a level: JSON nested ten thousand deep raised ``RecursionError`` out of
Python's ``json`` (a 500, and a dropped connection, on an import). So every body and every line
of an import is measured first, without recursion and in time linear in its length: escapes out,
numpy marks what lies inside strings and sums the brackets outside them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_JSON_DEPTH", "json_depth", "too_deep"]

MAX_JSON_DEPTH = 128
"""The deepest nesting hivemem reads: a memory's ``details`` may nest 100 levels at most (the
``max_details_depth`` ceiling), and a request wraps them in a few more."""

_QUOTE = ord('"')
_STEP = np.zeros(256, dtype=np.int8)  # what each byte does to the depth outside a string
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def json_depth(data: bytes | str) -> int:
    """The deepest nesting of arrays and objects in ``data`` (a scalar alone is 0). Text that is not
    JSON gets a number too: brackets outside strings counted as if they were JSON's."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if b"[" not in raw and b"{" not in raw:
        return 0
    # Escapes out first: each escaped backslash, then each escaped quote (left to right, as a
    # parser reads them); every quote left opens or closes a string.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    chars = np.frombuffer(unescaped, dtype=np.uint8)
    # Inside a string: an odd number of quotes up to it (a closing quote is a bracket of no one's).
    inside = (np.cumsum(chars == _QUOTE, dtype=np.int32) & 1).astype(bool)
    steps = _STEP[chars]
    steps[inside] = 0
    return max(0, int(np.cumsum(steps, dtype=np.int32).max()))


def too_deep(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``data`` is refused for its nesting (``nests 5000 levels deep, at most 128 …``), or None."""
    depth = json_depth(data)
    return f"nests {depth} levels deep, at most {limit} are allowed" if depth > limit else None
