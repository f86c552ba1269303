"""Plain text (txt, rst, csv, log): decoded, cut into paragraphs at blank lines, no headings.

Decoding: a BOM decides first; then strict UTF-8, which nearly every text file today is; only
then a detector (charset-normalizer), whose guesses on short inputs are often wrong, which is
why it comes last (and why, among its equally good guesses, windows-1252 is taken). Text no decoder accepts is refused.
"""

from __future__ import annotations

import codecs
import re

from hivemem.errors import DocumentError
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument

__all__ = ["decode", "paragraphs", "parse_text"]

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_BLANK_LINES = re.compile(r"\n[ \t]*\n+")


def decode(data: bytes, name: str) -> str:
    """The text of ``data``: BOM, else strict UTF-8, else the detector's best guess."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise DocumentError(f"cannot decode as {encoding}: {exc.reason}", source=name) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    guesses = list(from_bytes(data))
    if not guesses:
        raise DocumentError("cannot decode: not text in any encoding hivemem recognises", source=name)
    best = guesses[0]
    # Short texts leave the detector undecided between code pages that decode them equally well
    # (cp1250 or cp1252 for French accents); among those, windows-1252 wins, as it does in browsers.
    tied = [g for g in guesses if (g.chaos, g.coherence) == (best.chaos, best.coherence)]
    chosen = next((g for g in tied if g.encoding == "cp1252"), best)
    return str(chosen)


def paragraphs(text: str) -> list[str]:
    """Non-empty paragraphs of ``text``, split at blank lines, with line ends normalised."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [part.strip() for part in _BLANK_LINES.split(text) if part.strip()]


def parse_text(data: bytes, name: str) -> ParsedDocument:
    """A text file as paragraphs; its title is its first line."""
    parts = paragraphs(decode(data, name))
    if not parts:
        raise DocumentError("no text to index (the file holds only whitespace)", source=name)
    title = parts[0].split("\n", 1)[0][:200]
    return ParsedDocument(title, DocumentFormat.TEXT, tuple(Block(part) for part in parts))
