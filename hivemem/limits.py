"""Limits on caller input: what a memory may carry, and the text rules every text field follows.

A memory is a note, not a file store: its ``details`` are kilobytes, a handful of tags and paths.
Each number here is a tuning parameter (``HIVEMEM_MAX_*``); the request schemas in
:mod:`hivemem.schemas` are built from a :class:`Limits`, so the published schema and the
validation always say the same thing.

Text rules, as one regular expression per field (:func:`text_pattern`), published in the schema:
no control characters (C0 except tab, newline and carriage return; DEL; C1; the byte-order mark); surrounding
whitespace is allowed but does not count towards a field's minimum length, and is stripped
before storing. Lone surrogates are not text at all: the validation refuses them before any rule.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import Field

from hivemem.tuning import Tuning

__all__ = [
    "DEFAULT_LIMITS",
    "FORBIDDEN_CHARACTERS",
    "Limits",
    "details_problem",
    "printable",
    "text_pattern",
]

# A character class body: C0 controls but \t \n \r, DEL, the C1 controls, and the byte-order mark
# (whitespace to ECMA-262 only: refusing it keeps every engine's idea of whitespace the same).
FORBIDDEN_CHARACTERS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff"


_FORBIDDEN = re.compile(f"[{FORBIDDEN_CHARACTERS}]")


def printable(text: str) -> str:
    """``text`` with each forbidden character replaced by a space: for importers of text written
    elsewhere (a corpus, a log), whose stray control characters would otherwise be refused."""
    return _FORBIDDEN.sub(" ", text)


def text_pattern(min_chars: int = 1) -> str:
    """The pattern of a text field with at least ``min_chars`` between its first and last non-space
    character and no forbidden character anywhere.

    Written for the engines that read it: Python's ``re`` (validation, and fuzzers generating
    requests), Rust's ``regex`` (fast JSON Schema validators) and ECMA-262 (JSON Schema's own
    dialect); their whitespace classes agree once control characters are excluded.
    """
    if min_chars < 1:
        raise ValueError("min_chars must be at least 1")
    space = rf"[^\S{FORBIDDEN_CHARACTERS}]"
    edge = rf"[^\s{FORBIDDEN_CHARACTERS}]"
    any_char = rf"[^{FORBIDDEN_CHARACTERS}]"
    body = rf"(?:{any_char}*{edge})?" if min_chars == 1 else rf"{any_char}{{{min_chars - 2},}}{edge}"
    return rf"^{space}*{edge}{body}{space}*$"


class Limits(Tuning):
    """How much one memory may carry. ``details`` is measured as compact UTF-8 JSON."""

    group_title: ClassVar[str] = "Input limits"

    max_tags: int = Field(default=32, ge=0, le=1000, description="Most tags one memory (or one recall filter) has.")
    max_related_files: int = Field(default=64, ge=0, le=10_000, description="Most `related_files` one memory has.")
    max_details_bytes: int = Field(
        default=16_384,
        ge=2,
        le=16 * 1024 * 1024,
        description="Largest `details` object of a memory, in bytes of JSON.",
    )
    max_details_depth: int = Field(
        default=6,
        ge=1,
        le=100,
        description="Deepest nesting of a memory's `details` (an object of scalars is 1).",
    )


# The limits in force, read once when this module is imported: the request schemas are built from them.
DEFAULT_LIMITS = Limits()


def _depth(value: Any) -> int:
    # Iterative: a hostile document nested thousands deep must not hit the recursion limit.
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


def details_problem(details: dict[str, Any], limits: Limits) -> str | None:
    """Why ``details`` is refused (too deep, too large, not storable as UTF-8 JSON), or None."""
    depth = _depth(details)
    if depth > limits.max_details_depth:
        return f"nests {depth} levels deep, at most {limits.max_details_depth} are allowed"
    try:
        size = len(json.dumps(details, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        return f"is not storable as UTF-8 JSON ({type(exc).__name__})"
    if size > limits.max_details_bytes:
        return f"is {size} bytes as JSON, at most {limits.max_details_bytes} are allowed"
    return None
