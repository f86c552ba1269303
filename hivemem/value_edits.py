"""One text that is another with a value changed in place: a setting's new number or position.

Stems miss such an edit in a long text ("on" and "off" are stop words to them, and the new number
may be written elsewhere in the text); a word-level diff sees it. :func:`edited_in_place` is the
contradiction check's (:mod:`hivemem.contradiction`), :func:`single_edit` also tells the subject
rules (:mod:`hivemem.subjects`) that two texts are one statement with another value.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

__all__ = ["edited_in_place", "is_plain_number", "single_edit", "words_of"]

# The contradiction check's words: "7/tcp", "eu-west-1", "2.5x" and "don't" are one word each.
_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*(?:['’][a-z]+)?(?:[.\-/][a-z0-9+#]+)*")
# Words that state a switch's position: a pair of them swapped in place is a setting changed.
_SWITCHES = frozenset(
    ["on", "off", "true", "false", "yes", "no", "enabled", "disabled", "enable", "disable", "always", "never"]
)
_EDIT_MAX_WORDS = 2  # words a side of an edit in place may hold
_EDIT_MIN_KEPT = 4  # words of the text that the edit must leave as they were
# 50, 2.5, 30s, 64kb, 100/min: a number and its unit, where 7/tcp is a code.
_PLAIN_NUMBER = re.compile(
    r"^\d[\d.,]*(?:[a-z]{1,3})?(?:/(?:s|sec|second|min|minute|h|hr|hour|d|day|week|month|year|req|request|user))?$"
)


def words_of(text: str) -> list[str]:
    """``text``'s words, lower case, as the diff compares them."""
    return _WORD.findall(text.lower())


def is_plain_number(word: str) -> bool:
    """Whether ``word`` is a number with at most a unit ("50", "30s", "100/min"), not a code ("7/tcp")."""
    return _PLAIN_NUMBER.match(word) is not None


def single_edit(a: list[str], b: list[str], most: int = _EDIT_MAX_WORDS) -> tuple[list[str], list[str]] | None:
    """The words ``a`` had and ``b`` has instead, when the two differ in one place by ``most``
    words a side at most; None when they differ more, or not at all."""
    edits = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(edits) != 1:
        return None
    _, a_start, a_end, b_start, b_end = edits[0]
    was, now = a[a_start:a_end], b[b_start:b_end]
    return (was, now) if len(was) <= most and len(now) <= most else None


def edited_in_place(older: str, newer: str) -> str | None:
    """Why ``newer`` is ``older`` with one setting changed in place, a number for a number ("The
    default is 50 tuples" / "… 100 tuples") or a switch for its opposite ("The default is off" /
    "… on"); None when it is not. Codes that merely hold a number ("7/tcp" / "7/udp") are not
    settings: two of them may both hold."""
    a, b = words_of(older), words_of(newer)
    edit = single_edit(a, b)
    if edit is None or not edit[0] or not edit[1] or len(a) - len(edit[0]) < _EDIT_MIN_KEPT:
        return None
    was, now = edit
    numbers = all(is_plain_number(w) for w in (*was, *now))
    switches = len(was) == len(now) == 1 and {was[0], now[0]} <= _SWITCHES
    if numbers or switches:
        return f"the same statement with another value: {' '.join(was)} / {' '.join(now)}"
    return None
