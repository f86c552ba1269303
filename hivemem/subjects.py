"""What a memory names as its subject, as opposed to the values it states about it.

Resolution folds or replaces a memory only when the newcomer speaks of the *same* subject. The
cosine cannot tell: two reference entries of one manual ("trace_userlocks: if on, emit information
about user lock usage" / "trace_lock_table: …") or two lines of one runbook ("service 7 restarts
with the drain-first procedure" / "service 4 …") sit closer than many rewordings of one fact. What
tells them apart is the name of the thing each is about, written where a subject is written:

- an **identifier** in the title or at the head of the text: a snake_case or dotted name
  (``log_min_messages``, ``vm.swappiness``), a path (``/etc/services``), a command-line flag
  (``--no-sync``), or a title that is one word ("geqo", "TimeZone (string)");
- a **numbered item** anywhere: a number that follows the noun it numbers ("service 7", "ADR 12",
  "step 3", "node-4"), where a number *before* a noun counts it ("3 nodes") and a number after a
  product or a setting is its value ("Postgres 14", "port 8003", "timeout 30").

Two memories that each name a subject the other does not name are two facts, whatever else they
share: stored apart, never merged, never one superseding the other.
"""

from __future__ import annotations

import re

from hivemem.contradiction import names_a_transition
from hivemem.value_edits import single_edit, words_of

__all__ = ["subjects_apart"]


def _words(text: str) -> frozenset[str]:
    """A set of words written as one string, a word list being easier to read that way."""
    return frozenset(text.split())


_SNAKE = re.compile(r"(?<![\w.])_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)*(?![\w])")  # with a "_" somewhere
# In a title a hyphenated word is a name too ("maxmemory-policy"); in a text it is mostly prose.
_KEBAB = re.compile(r"(?<![\w.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w-])")
# Two segments of two letters or more at least: "vm.swappiness", "a.b.c" but not "e.g." or "3.11".
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z][\w-]+(?:\.[A-Za-z][\w-]*)+(?![\w])")
_PATH = re.compile(r"(?<![\w])(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*")
_FLAG = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]{2,}")
_FILE_ENDINGS = frozenset({"com", "org", "net", "io", "txt", "md"})

# Nouns whose number names one of many ("service 7"): where the noun is a product or a setting,
# the number after it is its value instead ("Postgres 14", "port 8003"), so neither is listed.
_NUMBERED_NOUNS = _words(
    """item step round stage phase task job node host server worker shard replica queue rule adr rfc
    pep issue ticket bug pr case test team squad room floor rack section chapter part page row entry
    exercise lab lesson question service cluster site store tenant customer account project module
    milestone sprint runbook playbook incident alert check gate lane station machine vm instance pod
    container volume disk bucket region zone appendix figure table example option point level tier
    unit group"""
)
_NUMBERED = re.compile(r"\b([a-z]+)[\s#-]*#?(\d+[a-z]?)\b")
# The head of a text: where its grammatical subject is written ("log_duration (boolean): …",
# "The vm.swappiness sysctl …"). An identifier further on is a value ("the config moved to /etc/b").
_HEAD_WORDS = 3


def _identifiers(text: str) -> set[str]:
    found = {m.group().lower() for m in _SNAKE.finditer(text) if "_" in m.group()}
    found |= {
        m.group().lower()
        for m in _DOTTED.finditer(text)
        if m.group().rsplit(".", 1)[-1].lower() not in _FILE_ENDINGS or m.group().count(".") > 1
    }
    found |= {m.group().rstrip(".").lower() for m in _PATH.finditer(text) if len(m.group()) > 2}
    found |= {m.group().lower() for m in _FLAG.finditer(text)}
    return found


_TYPE_NOTE = re.compile(r"\s*\([^)]*\)\s*$")  # "ssl (boolean)": a name and its type


def _title_names(title: str) -> set[str]:
    """A title's identifiers, and the title itself where it is one word (a name: "ssl (boolean)",
    "TimeZone", "geqo"): a reference entry is titled by what it is about."""
    bare = _TYPE_NOTE.sub("", title).strip()
    lone = {bare.lower()} if len(bare) >= 3 and re.fullmatch(r"[\w.-]+", bare) else set()
    return _identifiers(title) | {m.group() for m in _KEBAB.finditer(title.lower())} | lone


def _entry_names(older: tuple[str, str], newer: tuple[str, str]) -> tuple[str, str] | None:
    """The names two titles of one template give their entries ("redis.conf maxmemory" / "redis.conf
    maxmemory-policy", "Bash option autocd" / "Bash option cdspell"): the words each title has that
    the other lacks.

    An identifier among them (up to two words a side) is a name. A plain word (one a side, the
    titles sharing two more) is one unless the two are one fact's update: a title word that says
    so ("Nightly backup moved"), a text that names a change ("… drop TypeScript for Go"), texts
    that differ by one value ("We use MySQL" / "We use PostgreSQL"), or texts that each speak of
    the other's title word ("API page size" / "Default page size")."""
    a, b = (
        _TEXT_WORD.findall(_TYPE_NOTE.sub("", older[0]).lower()),
        _TEXT_WORD.findall(_TYPE_NOTE.sub("", newer[0]).lower()),
    )
    if len(a) != len(b):
        return None
    # One template: the titles agree word for word but where they name their entries, in place
    # ("count parameter analyzer" / "count parameter q"). Titles cut from their texts at a length
    # ("note: the billing client …" / "the billing client … thirt") are shifted, not a template.
    differing = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    left, right = [a[i] for i in differing], [b[i] for i in differing]
    if not differing or len(differing) > _ENTRY_WORDS or set(left) & set(b) or set(right) & set(a):
        return None
    if any(w.isdigit() for w in (*left, *right)):
        return None  # a number is an item's (see _numbered) or a value ("Python 3.11" / "Python 3.12")
    names = (" ".join(left), " ".join(right))
    if any(_CODED.search(w) for w in (*left, *right)):
        return names
    if len(left) > 1 or len(right) > 1 or len(a) - len(left) < _TEMPLATE_WORDS:
        return None  # plain words: only a template's entries ("Bash option autocd"), not "Log shipping"
    if {left[0], right[0]} & _NOT_NAMES or names_a_transition(older[1]) or names_a_transition(newer[1]):
        return None
    older_words, newer_words = set(_TEXT_WORD.findall(older[1].lower())), set(_TEXT_WORD.findall(newer[1].lower()))
    if left[0] in newer_words and right[0] in older_words:
        return None
    return None if single_edit(words_of(older[1]), words_of(newer[1])) else names


# Title words that say what a memory does to another, or join words: never an entry's name.
_NOT_NAMES = _words(
    """moved changed switched replaced updated upgraded migrated revised corrected fixed latest new old
    now current previous and or of the a an to for in on at with by from is are was"""
)
# A name written as code: joined parts ("maxmemory-policy", "_source"), letters with digits ("PS3").
_CODED = re.compile(r"\w[-_./]\w|^_|[a-z]\d|\d[a-z]")
_TEMPLATE_WORDS = 2  # words two titles share when they are one template's entries
_ENTRY_WORDS = 2  # words of a title that name its entry, where one of them is an identifier
_TEXT_WORD = re.compile(r"\w+(?:[-_./]\w+)*")
# "ssl (boolean): …": a name and its type open an entry. A word and a colon alone do not ("note: …",
# "reminder: …" open a note, not an entry), unless the word is written as code ("max_wal_size: …").
_LEADING_NAME = re.compile(r"^\s*([\w.-]{3,})\s*(?:\(|:)")


def _head_names(content: str) -> set[str]:
    """The identifiers among a text's first words, and the name it opens with as an entry does."""
    lead = _LEADING_NAME.match(content)
    named = lead is not None and (lead.group().rstrip().endswith("(") or _CODED.search(lead.group(1)) is not None)
    return _identifiers(" ".join(content.split()[:_HEAD_WORDS])) | (
        {lead.group(1).lower()} if lead and named else set()
    )


def _numbered(text: str) -> set[str]:
    found = set()
    for noun, number in _NUMBERED.findall(text.lower()):
        singular = noun[:-1] if noun.endswith("s") and noun[:-1] in _NUMBERED_NOUNS else noun
        if singular in _NUMBERED_NOUNS:
            found.add(f"{singular}#{number}")
    return found


def _named_apart(a: set[str], b: set[str]) -> bool:
    return bool(a) and bool(b) and not (a <= b or b <= a)


def subjects_apart(older: tuple[str, str], newer: tuple[str, str]) -> str | None:
    """Why two memories, each a (title, content), name different subjects; None when they may be one.

    - Their titles name different identifiers (``ssl_crl_file`` / ``ssl_crl_dir``), or, where
      neither title names one, the heads of their texts do: the entry a text is about is its
      subject even where it mentions the other's ("a fraction … to add to
      autovacuum_vacuum_insert_threshold" is about ``autovacuum_vacuum_insert_scale_factor``).
    - Each numbers an item the other never mentions ("service 7" / "service 4"); "ADR 15
      supersedes ADR 12" mentions ADR 12, so it may take it back.

    One that names no subject of these kinds ("Database is Postgres 14") may be about anything,
    and is left to the other rules.
    """
    (older_title, older_text), (newer_title, newer_text) = older, newer
    titled = _title_names(older_title), _title_names(newer_title)
    if not any(titled):
        titled = _head_names(older_text), _head_names(newer_text)
    if _named_apart(*titled):
        return f"different subjects: {min(titled[0] - titled[1])} / {min(titled[1] - titled[0])}"
    entries = _entry_names(older, newer)
    if entries:
        return f"different subjects: {entries[0]} / {entries[1]}"
    older_items, newer_items = _numbered(f"{older_title} {older_text}"), _numbered(f"{newer_title} {newer_text}")
    only_older, only_newer = older_items - newer_items, newer_items - older_items
    if only_older and only_newer:
        return f"different numbered subjects: {min(only_older)} / {min(only_newer)}"
    return None
