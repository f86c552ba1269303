"""A PDF page's layout, from PDFium's text runs: its lines, the running headers and footers, where
its headings are, and its text read in bands between them.

PDFium gives a page's text and a rectangle for each run of it; lines, their font sizes and their
heights come from the runs. Headings come from the outline (a title looked for on the line its
destination points at) or, in a PDF without one, from lines set larger than the text. A page's
first or last line that recurs on at least :data:`RUNNING_LINE_PAGES` pages with only its numbers
changed is a running header or footer ("Chapter 3: Basic Shell Features 35", "GNU Bash 5.2 … 4")
and is left out: repeated in every chunk it would match every query about a chapter's name, and it
splits the paragraphs that cross a page.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RUNNING_LINE_PAGES",
    "Box",
    "PageLines",
    "SectionStart",
    "clean",
    "font_headings",
    "heading_sizes",
    "page_bands",
    "page_lines",
    "placed",
    "running_lines",
]

Box = tuple[float, float, float, float]
"""A page's box in PDF points: left, bottom, right, top."""

# PDFium marks a word hyphenated across a line end with \x02 before the line break: the word is
# joined again, or BM25 would index "other" and "wise" for "otherwise". Glyphs of the private-use
# area (pieces of drawn brackets in man pages) carry no text.
_SOFT_HYPHEN = re.compile(r"\x02\r?\n?")
_PRIVATE_USE = re.compile(r"[\ue000-\uf8ff]")
_NUMBERS = re.compile(r"\d+")

RUNNING_LINE_PAGES = 3
"""A first or last line on this many pages (numbers aside) is a running header or footer."""
# A line set this much larger than the text is a heading, in a PDF without an outline (groff sets
# a man page's section names at 10.9 points over 10); a longer line than _HEADING_CHARS is text.
_HEADING_SCALE = 1.05
_HEADING_CHARS = 100
# An outline title found on a line: at most this many characters of label (a section number)
# before it, and at least this many of it on the first line of a heading that wraps.
_HEADING_LABEL_CHARS = 16
_WRAPPED_HEADING_CHARS = 12
_RUNNING_LINE_CHARS = 160  # longer than any header; a longer line is text, however often it recurs


def clean(text: str) -> str:
    """PDFium's text as hivemem indexes it: hyphenated words joined, drawing glyphs dropped."""
    # groff typesets a hyphen-minus as U+2212 (man pages: "−−login"): read it as the "-" it was.
    return _PRIVATE_USE.sub("", _SOFT_HYPHEN.sub("", text)).replace("\r\n", "\n").replace("\u2212", "-")


@dataclass(frozen=True, slots=True)
class SectionStart:
    """Where an outline entry's heading is: its page (0-based), its height in PDF points from the
    page's bottom (None: the page's top), and its heading path."""

    page: int
    top: float | None
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Line:
    """One line of a page: the height it spans (PDF points from the page's bottom) and the font
    size of its smallest run."""

    bottom: float
    top: float
    size: float


@dataclass(frozen=True, slots=True)
class PageLines:
    """A page's lines, top first, and the text of its first and last with numbers masked (a
    running line's key)."""

    lines: list[_Line]
    first: str
    last: str


def _font_size(textpage: Any, rect: Box) -> float:
    import pypdfium2.raw as pdfium_c

    left, bottom, right, top = rect
    index = textpage.get_index((left + right) / 2, (bottom + top) / 2, (right - left) / 2, (top - bottom) / 2)
    return float(pdfium_c.FPDFText_GetFontSize(textpage.raw, index)) if index is not None and index >= 0 else 0.0


def _lines(textpage: Any) -> list[_Line]:
    """The page's lines, top first: runs of text whose middles lie within one another's height."""
    runs = sorted((textpage.get_rect(index) for index in range(textpage.count_rects())), key=lambda rect: -rect[3])
    lines: list[_Line] = []
    for rect in runs:
        size = _font_size(textpage, rect)
        line = lines[-1] if lines else None
        if line is not None and line.bottom <= (rect[1] + rect[3]) / 2 <= line.top:
            lines[-1] = _Line(min(line.bottom, rect[1]), max(line.top, rect[3]), min(line.size, size))
        else:
            lines.append(_Line(rect[1], rect[3], size))
    return lines


def _line_text(textpage: Any, box: Box, line: _Line) -> str:
    return " ".join(clean(textpage.get_text_bounded(box[0], line.bottom, box[2], line.top)).split())


def _running_key(text: str) -> str:
    return _NUMBERS.sub("#", text) if len(text) <= _RUNNING_LINE_CHARS else ""


def page_lines(textpage: Any, box: Box) -> PageLines:
    lines = _lines(textpage)
    if not lines:
        return PageLines([], "", "")
    return PageLines(
        lines,
        _running_key(_line_text(textpage, box, lines[0])),
        _running_key(_line_text(textpage, box, lines[-1])),
    )


def running_lines(pages: list[PageLines]) -> tuple[set[str], set[str]]:
    """The first-line and last-line keys that recur on enough pages to be running headers and footers."""
    firsts = Counter(page.first for page in pages if page.first)
    lasts = Counter(page.last for page in pages if page.last)
    return (
        {key for key, count in firsts.items() if count >= RUNNING_LINE_PAGES},
        {key for key, count in lasts.items() if count >= RUNNING_LINE_PAGES},
    )


def heading_sizes(pages: list[PageLines]) -> dict[float, int]:
    """For a PDF without an outline: the font sizes set larger than its text (the size most of its
    lines have) by :data:`_HEADING_SCALE`, largest first, each with its heading level (0 is the top)."""
    sizes = Counter(round(line.size, 1) for page in pages for line in page.lines if line.size)
    if not sizes:
        return {}
    body = sizes.most_common(1)[0][0]
    larger = sorted((size for size in sizes if size >= body * _HEADING_SCALE), reverse=True)
    return {size: level for level, size in enumerate(larger)}


def font_headings(
    textpage: Any,
    box: Box,
    page: PageLines,
    number: int,
    levels: dict[float, int],
    path: list[str],
) -> list[SectionStart]:
    """The page's headings by font size; ``path`` is the heading path so far, carried across pages."""
    starts = []
    for line in page.lines:
        level = levels.get(round(line.size, 1))
        text = _line_text(textpage, box, line) if level is not None else ""
        if level is None or not text or len(text) > _HEADING_CHARS:
            continue
        path[:] = [*path[:level], text]
        starts.append(SectionStart(number, line.top, tuple(path)))
    return starts


def _normal_title(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_heading_line(line: str, title: str) -> bool:
    """Whether a line (normalised) is the heading ``title``: the title with at most a short label
    before it ("3.6.1 Redirecting Input", "Appendix B …"), or the start of a title that wraps."""
    labels = [0] + [i + 1 for i, char in enumerate(line[: _HEADING_LABEL_CHARS + 1]) if char == " "]
    for cut in labels:
        rest = line[cut:]
        if rest == title or (len(rest) >= _WRAPPED_HEADING_CHARS and title.startswith(rest)):
            return True
    return False


def placed(textpage: Any, box: Box, page: PageLines, headings: list[SectionStart]) -> list[SectionStart]:
    """The outline's headings on this page, each at the top of the line that holds its title.

    A destination's height is often not the heading's: typesetters point several headings of one
    page at its top, or a little above the line. So each title is looked for among the page's lines
    from the one it points at (and below the heading before); the destination itself is kept when no
    line holds the title (a heading drawn as an image, a title reworded in the outline).
    """
    placed = []
    texts: dict[int, str] = {}
    start = 0
    for heading in headings:
        title = _normal_title(heading.path[-1])
        found = None
        for index in range(start, len(page.lines)):
            line = page.lines[index]
            if heading.top is not None and line.bottom > heading.top:
                continue
            if index not in texts:
                texts[index] = _normal_title(clean(_line_text(textpage, box, line)))
            if _is_heading_line(texts[index], title):
                found = index
                break
        if found is None:
            placed.append(heading)
            continue
        placed.append(SectionStart(heading.page, page.lines[found].top, heading.path))
        start = found + 1
    return placed


def _snap(cut: float, lines: list[_Line]) -> float:
    """``cut`` moved off a line it runs through, to the side where most of that line lies (PDFium's
    bounded text takes every glyph a band touches: a cut through a line would read it twice)."""
    for line in lines:
        if line.bottom < cut < line.top:
            return line.top if cut >= (line.bottom + line.top) / 2 else line.bottom
    return cut


def page_bands(
    textpage: Any,
    box: Box,
    page: PageLines,
    body: tuple[float, float],
    headings: list[SectionStart],
    section: tuple[str, ...],
) -> tuple[list[tuple[tuple[str, ...], str]], tuple[str, ...]]:
    """The page's text between ``body`` (bottom, top), cut at its headings: (section, text) bands,
    and the section in force at the page's end. A band that is only its heading's line (a chapter
    title followed at once by its first section's) is left out: its title is in the path of every
    section under it, as headings are in the other formats."""
    bottom, top = body
    bands: list[tuple[tuple[str, ...], str]] = []
    upper = top
    title = ""

    def read(lower: float) -> None:
        text = textpage.get_text_bounded(box[0], lower, box[2], upper)
        if not (title and _is_heading_line(_normal_title(clean(text)), title)):
            bands.append((section, text))

    for heading in headings:
        # A heading placed below the body (in the footer) starts its section on the next page.
        cut = top if heading.top is None else max(bottom, min(top, _snap(heading.top, page.lines)))
        if cut < upper:
            read(cut)
            upper = cut
        section, title = heading.path, _normal_title(heading.path[-1])
    if upper > bottom:
        read(bottom)
    return bands, section
