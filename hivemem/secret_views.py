"""Other readings of a text, in which a credential written to slip past a scanner shows its shape.

A key pasted in fullwidth digits (``ＡＫＩＡ…``), spaced out (``A K I A …``, ``ghp_ abcd efgh …``),
broken by zero-width characters, or base64-encoded matches no provider pattern as it stands. Each
view here gives the text as the key's owner meant it, with a way back to where each character of
the view lies in the text, so that a finding in a view is a span of the text itself:

- :func:`folded`: each character whose compatibility form (NFKC) is one ASCII character replaced
  by it; same length, so a span needs no map;
- :func:`collapsed`: the text without its spaces, line breaks and invisible format characters,
  with the offset in the text of every character kept;
- :func:`decoded_runs`: each run of base64 that decodes to printable text, with that text.

Every view is linear in the text's length: numpy over code points, and RE2 for the runs.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import re2

__all__ = ["Collapsed", "collapsed", "decoded_runs", "folded"]

# Removed by `collapsed`: what spaces a key out (spaces, tabs, no-break spaces, line breaks) and
# what hides inside one unseen (zero-width spaces and joiners, word joiners, soft hyphens, the BOM).
_SEPARATORS = np.array(
    [0x20, 0x09, 0x0A, 0x0D, 0xA0, 0x3000, 0xAD, 0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0xFEFF],
    dtype=np.uint32,
)
_BASE64_RUN = re2.compile(r"[A-Za-z0-9+/_\-]{24,}={0,2}")
_MAX_RUN_CHARS = 16_384  # a key, a key file or a config is a few KB; a longer run is an image or a blob
_MAX_RUNS = 2_000  # runs decoded in one text: each is a few microseconds
_PRINTABLE_SHARE = 0.95  # of a decoded run's characters: text, not bytes


def _code_points(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _text(points: npt.NDArray[np.uint32]) -> str:
    return points.tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=65_536)  # bounded: a text may hold any of a million code points
def _ascii_form(char: str) -> str:
    form = unicodedata.normalize("NFKC", char)
    return form if len(form) == 1 and form.isascii() else char


def folded(text: str) -> str | None:
    """``text`` with each character whose NFKC form is one ASCII character (fullwidth letters and
    digits, mathematical alphanumerics, …) replaced by it; None where that changes nothing."""
    if text.isascii():
        return None
    points = _code_points(text)
    wide = np.unique(points[points > 0x7F])  # each distinct character once: a few thousand at most
    forms = np.array([ord(_ascii_form(chr(int(p)))) for p in wide], dtype=np.uint32)
    changing = forms != wide
    if not changing.any():
        return None
    points = points.copy()
    at = np.isin(points, wide[changing])
    points[at] = forms[changing][np.searchsorted(wide[changing], points[at])]
    return _text(points)


@dataclass(frozen=True, slots=True)
class Collapsed:
    """A text without its separators: ``text``, and ``offsets[i]``, where its character ``i`` lies in
    the original; ``gaps[i]``, whether separators were taken out just before character ``i``."""

    text: str
    offsets: npt.NDArray[np.intp]
    gaps: npt.NDArray[np.bool_]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that the view's ``[start, end)`` came from."""
        return int(self.offsets[start]), int(self.offsets[end - 1]) + 1

    def groups(self, start: int, end: int) -> list[int]:
        """The lengths of the runs between separators within the view's ``[start, end)``."""
        cuts = [start, *(int(i) for i in np.flatnonzero(self.gaps[start + 1 : end]) + start + 1), end]
        return [b - a for a, b in itertools.pairwise(cuts)]


def collapsed(text: str) -> Collapsed | None:
    """``text`` without spaces, line breaks and invisible format characters; None when it has none
    between two other characters (nothing a key could be spaced out by)."""
    points = _code_points(text)
    keep = ~np.isin(points, _SEPARATORS)
    if keep.all():
        return None
    offsets = np.flatnonzero(keep)
    gaps = np.zeros(len(offsets), dtype=bool)
    gaps[1:] = np.diff(offsets) > 1
    if not gaps.any():
        return None
    return Collapsed(_text(points[keep]), offsets, gaps)


def _decode(run: str) -> str | None:
    body = run.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in decoded)
    return decoded if decoded and printable >= _PRINTABLE_SHARE * len(decoded) else None


def decoded_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """Each run of base64 (standard or URL-safe) in ``text`` that decodes to printable UTF-8 text:
    its start, its end and the text. Binary (an image, a compressed blob) is left out."""
    for count, match in enumerate(_BASE64_RUN.finditer(text)):
        if count >= _MAX_RUNS:
            return
        run = match.group()
        if len(run) > _MAX_RUN_CHARS:
            continue
        decoded = _decode(run)
        if decoded is not None:
            yield match.start(), match.end(), decoded
