"""Credentials in text: where they are, what kind, and the text with them replaced.

Team memory is read by every teammate's agent and kept in exports and backups, so a key pasted into
a note must not be stored. Two sources of findings:

- the provider detectors of ``detect-secrets`` (Yelp's maintained scanner): AWS, Azure storage,
  GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI, OpenAI, Discord, Telegram, Mailchimp,
  Square, Artifactory, IBM and SoftLayer credentials, JSON Web Tokens, private key blocks, and
  passwords in URLs (``scheme://user:password@host``), each by its own patterns;
- what those miss: the key shapes of providers it does not know (Anthropic, newer OpenAI keys,
  Google, Hugging Face, GitHub fine-grained tokens), and a high-entropy value right after a word
  such as key, secret, token or password (``DB_PASSWORD=…``, ``api key: …``), scored with
  ``detect-secrets``' Shannon entropy.

What a credential only looks like is left alone: UUIDs, commit SHAs and digests, base64 images, an
environment variable or placeholder named where a value would be. A finding carries the span and
the kind, never the value, so that no refusal, log line or audit record can repeat it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

__all__ = ["SecretFinding", "find_secrets", "redact", "redaction_mark"]


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A credential in a text: its kind (``aws_access_key``, ``private_key``, …) and where it lies."""

    kind: str
    start: int
    end: int


# detect-secrets' detectors left out: public IP addresses are not credentials, and its entropy and
# keyword detectors judge strings of source files (the rule below judges prose and config lines).
_NOT_CREDENTIALS = {"Public IP (ipv4)"}
# Three of its patterns backtrack over crafted text ("eyJ", "sk-" or "://" repeated: time grows
# with the square of the length). Their linear forms: a token starts where no token character
# precedes it, and an npm registry path is bounded.
_LINEAR_FORMS = {
    "npm_tokens": r"(?<!/)//[^\s]{1,200}?/:_authToken=\s*(npm_[A-Za-z0-9]{20,}|[A-Fa-f0-9\-]{36})",
    "json_web_token": r"(?<![A-Za-z0-9_=\-])eyJ[A-Za-z0-9_=\-]+\.[A-Za-z0-9_=\-]+\.[A-Za-z0-9_=+/\-]*",
    "openai_token": r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9_\-]*?[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
}

_EXTRA_SHAPES = {
    "anthropic_key": r"\bsk-ant-[a-z]{2,10}\d{0,3}-[A-Za-z0-9_\-]{20,}",
    "openai_key": r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|\bsk-[A-Za-z0-9]{40,}\b",
    "google_api_key": r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])",
    "google_oauth_token": r"\bya29\.[0-9A-Za-z_\-]{20,}",
    "github_token": r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    "huggingface_token": r"\bhf_[A-Za-z0-9]{30,}\b",
    "connection_string_password": r"(?i)(?<![a-z])(?:password|pwd)\s*=\s*(?P<value>[^;\s'\"]{4,200})",
    "url_password": r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@]{0,100}:(?P<value>[^\s:/@]{3,200})@",
}
# A value found by those two is a password whatever its entropy, unless it is a reference to one.
_ANY_ENTROPY = frozenset({"connection_string_password", "url_password"})
# Patterns that cannot match without a literal: skipped where it is absent (npm's scans 200 characters).
_NEEDS = {"npm_tokens": "_authToken"}

_KEYWORD_VALUE = re.compile(
    r"(?i)(?P<name>(?:api[_\- ]?key|secret|token|passw(?:or)?d|pwd|"
    r"credentials?|private[_\- ]?key|access[_\- ]?key|auth(?:orization)?)[a-z0-9_.\-]{0,20})"
    r"[\"']?\s*(?:[:=]|:=|=>|\bis\b|\bwas\b)\s*(?:bearer\s+|basic\s+)?[\"'`]?(?P<value>[^\s\"'`,;<>]{8,200})"
)
# What sits where a value would, but is not one: references, placeholders, masks, and the look-alikes.
_NOT_A_VALUE = re.compile(
    r"(?ix)^(?:"
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
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_MAX_CHARS = 20_000


def _kind(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


@cache
def _provider_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    patterns: list[tuple[str, re.Pattern[str]]] = []
    detectors: dict[str, type[Any]] = get_mapping_from_secret_type_to_class()
    for name, detector in sorted(detectors.items()):
        kind = _kind(name)
        if name in _NOT_CREDENTIALS or not issubclass(detector, RegexBasedDetector):
            continue
        if kind in _LINEAR_FORMS:
            patterns.append((kind, re.compile(_LINEAR_FORMS[kind])))
            continue
        patterns += [(kind, regex) for regex in detector().denylist]
    patterns += [(kind, re.compile(pattern)) for kind, pattern in _EXTRA_SHAPES.items()]
    return tuple(patterns)


@cache
def _entropy_scorer() -> Base64HighEntropyString:
    return Base64HighEntropyString()


def _entropy(value: str) -> float:
    return float(_entropy_scorer().calculate_shannon_entropy(value))


def _looks_secret(value: str) -> bool:
    """A value random enough to be a credential: not a word, a number, a hex digest or a reference."""
    if _NOT_A_VALUE.match(value):
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    if classes < 2 or value.isdigit():
        return False
    entropy = _entropy(value)
    return (classes >= 3 and entropy >= _MIN_ENTROPY) or (len(value) >= 16 and entropy >= 3.5)


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The secret's own part of a match: its ``value`` group, else a first group long enough to be
    the secret (BasicAuth's password, npm's token), else the whole match."""
    if "value" in match.re.groupindex:
        return match.span("value")
    if match.re.groups and match.group(1) and len(match.group(1)) >= 8:
        return match.span(1)
    return match.span()


def _found(text: str) -> Iterator[SecretFinding]:
    for kind, pattern in _provider_patterns():
        if kind in _NEEDS and _NEEDS[kind] not in text:
            continue
        for match in pattern.finditer(text):
            start, end = _span(match)
            if kind in _ANY_ENTROPY and _NOT_A_VALUE.match(text[start:end]):
                continue
            if kind == "private_key":  # the header names it; the whole block is the secret
                while start > 0 and text[start - 1] == "-":
                    start -= 1
                block_end = _PEM_END.search(text, end, min(len(text), end + _PEM_MAX_CHARS))
                end = block_end.end() if block_end else min(len(text), end + _PEM_MAX_CHARS)
            yield SecretFinding(kind, start, end)
    first_begin = text.find("PRIVATE KEY")
    for end_line in _PEM_END.finditer(text):
        # The end of a key block whose header lies before this text (a chunk boundary cut it).
        if first_begin == -1 or first_begin >= end_line.start():
            yield SecretFinding("private_key", max(0, end_line.start() - _PEM_MAX_CHARS), end_line.end())
        break
    for match in _KEYWORD_VALUE.finditer(text):
        value = match.group("value").rstrip(".)")
        if _looks_secret(value):
            start = match.start("value")
            yield SecretFinding("secret_assignment", start, start + len(value))


def find_secrets(text: str) -> list[SecretFinding]:
    """The credentials in ``text``, in order, without overlaps (the first and longest wins)."""
    ordered = sorted(_found(text), key=lambda f: (f.start, -(f.end - f.start)))
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
