"""Credentials in text: where they are, what kind, and the text with them replaced.

Team memory is read by every teammate's agent and kept in exports and backups, so a key pasted into
a note must not be stored. Three sources of findings:

- the provider shapes of :mod:`hivemem.secret_patterns` (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  Anthropic, Google, private key blocks, passwords in URLs and connection strings, …);
- a high-entropy value right after a word such as key, secret, token or password
  (``DB_PASSWORD=…``, ``api key: …``), scored by its Shannon entropy;
- the same shapes in the readings of :mod:`hivemem.secret_views`, where a key written to slip past
  a scanner shows itself: fullwidth or other compatibility characters folded to ASCII, a key spaced
  out or cut by invisible characters, a key in base64.

Every pattern is RE2's, so a scan takes time linear in the text whatever it holds, and a scan has
a time budget besides (``SecretScanBudgetError`` past it: a write that cannot be checked is not
stored). What a credential only looks like is left alone: UUIDs, commit SHAs and digests, base64
images, an environment variable or placeholder named where a value would be. A finding carries the
span and the kind, never the value, so that no refusal, log line or audit record can repeat it.
"""

from __future__ import annotations

import bisect
import math
import string
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import re2

from hivemem.errors import SecretScanBudgetError
from hivemem.secret_patterns import PREFIXED_KINDS, PROVIDER_SHAPES
from hivemem.secret_views import Collapsed, collapsed, decoded_runs, folded

__all__ = ["SecretFinding", "find_secrets", "redact", "redaction_mark", "scan_budget_s"]


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A credential in a text: its kind (``aws_access_key``, ``private_key``, …) and where it lies."""

    kind: str
    start: int
    end: int


# Each pattern's memory for its automata. RE2 never needs more to stay linear: past it the DFA
# starts over or the NFA runs, slower but with the same bound. So the scan's memory is at most
# this times the number of patterns (about 60), whatever the text.
_PATTERN_MEMORY_BYTES = 2 * 1024 * 1024


def _compiled(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.max_mem = _PATTERN_MEMORY_BYTES
    options.log_errors = False  # a DFA out of its memory is expected on some texts, not an error
    return re2.compile(pattern, options)


# A password in a connection string or a URL is one whatever its entropy, unless it is a reference.
_ANY_ENTROPY = frozenset({"connection_string_password", "url_password"})
# Patterns that cannot match without a literal: skipped where it is absent.
_NEEDS = {"npm_tokens": "npm"}

_KEYWORD_VALUE = (
    r"(?i)(?P<name>(?:api[_\- ]?key|secret|token|passw(?:or)?d|pwd|"
    r"credentials?|private[_\- ]?key|access[_\- ]?key|auth(?:orization)?)[a-z0-9_.\-]{0,20})"
    r"[\"']?\s*(?:[:=]|:=|=>|\bis\b|\bwas\b)\s*(?:bearer\s+|basic\s+)?[\"'`]?(?P<value>[^\s\"'`,;<>]{8,200})"
)
# What sits where a value would, but is not one: references, placeholders, masks, and the look-alikes.
_NOT_A_VALUE = _compiled(
    r"(?i)^(?:"
    r"\$|%|\{\{|<|\[|\(|os\.environ|process\.env|env\[|getenv|settings\.|config\.|vault:|secrets?\."
    r"|x{4,}|\*{3,}|\.{3}|redacted|changeme|example|placeholder|your[_\-]|dummy|sample"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"  # a UUID
    r"|(?:sha(?:1|256|512)|md5):"  # a digest
    r"|data:"  # an inline image or file
    r"|https?://[^:@/]+(?:/|$)"  # a URL without credentials
    r"|~?\.{0,2}/|[a-z]+:/"  # a path, or a map or file of them (postfix's hash:/etc/…)
    r")"
)
_MIN_ENTROPY = 2.8  # bits per character: "S3cr3t!xyz9" scores 2.96, "hunter2-Corr3ct-Horse" 3.63
# The characters the entropy counts: base64's, URL-safe base64's and padding.
_ENTROPY_CHARSET = frozenset(string.ascii_letters + string.digits + "+/\\-_=")
# A run of one character where a key's random ones would be: a mask in an example (sk-proj-XXXX…).
_MASK = _compiled(r"(?:X{8}|x{8}|\*{8}|0{8}|\.{8})")
_PEM_END = _compiled(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_MAX_CHARS = 20_000
_MAX_SPACED = 100  # findings of one kind in a collapsed text (see _spaced)
# Between two decoded base64 runs: no pattern matches across a line break and a NUL.
_RUN_BREAK = "\n\x00\n"
# The scan's budget, in CPU seconds of its thread (a busy machine slows the wall clock, not this):
# generous beside what it takes (a 10,000-character write 1-15 ms, a megabyte 0.1-0.5 s).
_BUDGET_BASE_S = 1.0
_BUDGET_PER_MB_S = 5.0


def scan_budget_s(chars: int) -> float:
    """How many CPU seconds :func:`find_secrets` may take over a text of ``chars`` characters."""
    return _BUDGET_BASE_S + _BUDGET_PER_MB_S * chars / 1_000_000


@cache
def _provider_patterns() -> tuple[tuple[str, re2._Regexp], ...]:
    return tuple((kind, _compiled(pattern)) for kind, pattern in PROVIDER_SHAPES)


@cache
def _spaced_patterns() -> tuple[tuple[str, re2._Regexp], ...]:
    """The prefixed shapes as they are looked for in a collapsed text: a word boundary before the
    prefix says nothing there, where every word runs into the next."""
    return tuple(
        (kind, _compiled(pattern.removeprefix(r"\b"))) for kind, pattern in PROVIDER_SHAPES if kind in PREFIXED_KINDS
    )


@cache
def _keyword_value() -> re2._Regexp:
    return _compiled(_KEYWORD_VALUE)


def _entropy(value: str) -> float:
    counts = Counter(c for c in value if c in _ENTROPY_CHARSET)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_secret(value: str) -> bool:
    """A value random enough to be a credential: not a word, a number, a hex digest or a reference."""
    if _NOT_A_VALUE.search(value):
        return False
    classes = sum(
        (
            any("a" <= c <= "z" for c in value),
            any("A" <= c <= "Z" for c in value),
            any("0" <= c <= "9" for c in value),
            any(not (c.isascii() and c.isalnum()) for c in value),
        )
    )
    if classes < 2 or value.isdigit():
        return False
    entropy = _entropy(value)
    return (classes >= 3 and entropy >= _MIN_ENTROPY) or (len(value) >= 16 and entropy >= 3.5)


class _Clock:
    """The scan's deadline in its thread's CPU time, checked between patterns: RE2 bounds each
    pattern's time by the text's length, this the sum over every pattern and view."""

    def __init__(self, chars: int, budget_s: float | None) -> None:
        self.budget_s = scan_budget_s(chars) if budget_s is None else budget_s
        self.deadline = time.thread_time() + self.budget_s
        self.chars = chars

    def check(self) -> None:
        if time.thread_time() > self.deadline:
            raise SecretScanBudgetError(
                f"checking {self.chars} characters for credentials took more than {self.budget_s:.1f} CPU seconds; "
                "nothing was stored. Send the text in smaller parts"
            )


def _span(match: re2._Match) -> tuple[int, int]:
    """The secret's own part of a match: its ``value`` group, else the whole match."""
    group = match.re.groupindex.get("value")
    if group is not None and match.start(group) >= 0:
        span: tuple[int, int] = match.span(group)
        return span
    whole: tuple[int, int] = match.span()
    return whole


def _shapes(text: str, clock: _Clock) -> Iterator[SecretFinding]:
    """The provider shapes in ``text``, each a finding of its own span."""
    for kind, pattern in _provider_patterns():
        clock.check()
        if kind in _NEEDS and _NEEDS[kind] not in text:
            continue
        for match in pattern.finditer(text):
            start, end = _span(match)
            if kind in _ANY_ENTROPY and _NOT_A_VALUE.search(text[start:end]):
                continue
            if kind != "private_key" and _MASK.search(text[start:end]):
                continue
            if kind == "private_key":  # the header names it; the whole block is the secret
                while start > 0 and text[start - 1] == "-":
                    start -= 1
                block_end = _PEM_END.search(text[end : end + _PEM_MAX_CHARS])
                end = end + block_end.end() if block_end else min(len(text), end + _PEM_MAX_CHARS)
            yield SecretFinding(kind, start, end)
    clock.check()
    for match in _keyword_value().finditer(text):
        value = match.group("value").rstrip(".)")
        if _looks_secret(value):
            start, _ = _span(match)
            yield SecretFinding("secret_assignment", start, start + len(value))


def _cut_key_end(text: str) -> Iterator[SecretFinding]:
    """The end of a key block whose header lies before this text (a chunk boundary cut it)."""
    first_begin = text.find("PRIVATE KEY")
    end_line = _PEM_END.search(text) if "-----END " in text else None
    if end_line is not None and (first_begin == -1 or first_begin >= end_line.start()):
        yield SecretFinding("private_key", max(0, end_line.start() - _PEM_MAX_CHARS), end_line.end())


def _regular(groups: list[int]) -> int:
    """How many of a match's runs (between separators) form one spaced-out key: the first (the
    prefix, often set apart) and the last (the rest) may differ, every run between has one length.
    Prose has words of every length; a key spaced for reading has runs of 1, 4 or 5."""
    if len(groups) <= 2:
        return len(groups)
    width = groups[1]
    taken = 2
    while taken < len(groups) and groups[taken] == width:
        taken += 1
    if taken < len(groups) and groups[taken] < width:
        taken += 1  # the key's last run, shorter than the others
    return taken


def _spaced(view: Collapsed, clock: _Clock) -> Iterator[SecretFinding]:
    """Prefixed keys that only the collapsed ``view`` shows: spaced out, or cut by invisible
    characters. A finding counts when separators fell inside it at a regular pace. At most
    ``_MAX_SPACED`` of a kind: past that the text is a crafted one, and the write is refused already."""
    for kind, pattern in _spaced_patterns():
        clock.check()
        found = 0
        for match in pattern.finditer(view.text):
            start, end = _span(match)
            if not view.gaps[start + 1 : end].any():
                continue  # written whole: the plain scan has it
            groups = view.groups(start, end)
            if pattern.search(view.text[start : start + groups[0]]):
                continue  # its first run is a key written whole (the plain scan has it), then words
            kept = sum(groups[: _regular(groups)])
            again = pattern.search(view.text[start : start + kept]) if kept < end - start else match
            if again is None:
                continue
            a, b = _span(again)
            offset = start if again is not match else 0
            first, last = view.span(offset + a, offset + b)
            yield SecretFinding(kind, first, last)
            found += 1
            if found >= _MAX_SPACED:
                break


def _encoded(text: str, clock: _Clock) -> Iterator[SecretFinding]:
    """Base64 runs whose decoded text holds a credential: the whole run is the finding. The decoded
    runs are scanned as one text, each on a line of its own, so a run costs no pass of its own."""
    runs = list(decoded_runs(text))
    if not runs:
        return
    clock.check()
    starts, parts, at = [], [], 0
    for _, _, decoded in runs:
        starts.append(at)
        parts.append(decoded)
        at += len(decoded) + len(_RUN_BREAK)
    joined = _RUN_BREAK.join(parts)
    reported: set[int] = set()
    for found in _shapes(joined, clock):
        index = bisect.bisect_right(starts, found.start) - 1
        if index not in reported:
            reported.add(index)
            start, end, _ = runs[index]
            yield SecretFinding(found.kind, start, end)


def _found(text: str, clock: _Clock) -> Iterator[SecretFinding]:
    yield from _shapes(text, clock)
    yield from _cut_key_end(text)
    ascii_text = folded(text)
    if ascii_text is not None:  # the same length: its spans are the text's
        yield from _shapes(ascii_text, clock)
    view = collapsed(ascii_text if ascii_text is not None else text)
    if view is not None:
        yield from _spaced(view, clock)
    yield from _encoded(ascii_text if ascii_text is not None else text, clock)


def find_secrets(text: str, *, budget_s: float | None = None) -> list[SecretFinding]:
    """The credentials in ``text``, in order, without overlaps (the first and longest wins).

    Raises ``SecretScanBudgetError`` when the scan takes more than ``budget_s`` CPU seconds (by
    default :func:`scan_budget_s` of the text's length): a text that was not checked is not stored.
    """
    clock = _Clock(len(text), budget_s)
    ordered = sorted(_found(text, clock), key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[SecretFinding] = []
    for finding in ordered:
        if kept and finding.start < kept[-1].end:
            continue
        kept.append(finding)
    return kept


def redaction_mark(kind: str) -> str:
    """What stands in a text where a credential of ``kind`` was."""
    return f"[REDACTED:{kind}]"


def redact(text: str, findings: list[SecretFinding]) -> str:
    """``text`` with each finding replaced by its mark."""
    parts, at = [], 0
    for finding in findings:
        parts += [text[at : finding.start], redaction_mark(finding.kind)]
        at = finding.end
    return "".join([*parts, text[at:]])
