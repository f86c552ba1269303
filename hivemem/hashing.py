"""Content hashing: the key of exact-duplicate detection."""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["content_hash", "normalise_text"]

_WHITESPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Unicode NFC, case-folded, whitespace collapsed: two texts that read the same hash the same."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip().casefold()


def content_hash(content: str) -> str:
    """The sha256 hex digest of the normalised content."""
    return hashlib.sha256(normalise_text(content).encode("utf-8")).hexdigest()
