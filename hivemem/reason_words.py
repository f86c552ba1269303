"""A rule's reason in the words the memories used, not the stems the rules compare.

The contradiction rules work on Snowball stems, and their reasons named them: a user read
"different subjects: databas / postgr". Before a reason reaches an answer, each stem in the part
that names words (after its first colon, or inside its parentheses) becomes the first word of the
two memories that has it as its stem.
"""

from __future__ import annotations

import re

from hivemem.contradiction import stem_of

__all__ = ["in_their_words"]

_WORD = re.compile(r"[A-Za-z0-9][\w+#'’.-]*[\w+#]|[A-Za-z0-9]")
_NAMED_PART = re.compile(r"[:(]")


def in_their_words(reason: str, *texts: str) -> str:
    """``reason`` with the stems it names put back as ``texts`` wrote them."""
    split = _NAMED_PART.search(reason)
    if not split:
        return reason
    written: dict[str, str] = {}
    for text in texts:
        for word in _WORD.findall(text):
            written.setdefault(stem_of(word), word)
            written.setdefault(word.lower(), word)
    head, tail = reason[: split.end()], reason[split.end() :]
    return head + _WORD.sub(lambda m: written.get(m.group(), m.group()), tail)
