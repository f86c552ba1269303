"""A PDF page's layout, from PDFium's text: its lines, the running headers and footers, where its
headings are, and its text cut into sections at them.

PDFium gives a page's characters in the order they are drawn (reading order for what typesetters
make, a column at a time on a page of two) and a rectangle for each run of text; lines, their font
sizes and heights come from the runs. A heading is found as the character where its title starts:
an outline title searched for on its page (at or below the height its destination points at, since
typesetters often point several headings of a page at its top), or, in a PDF without an outline, a
line set larger than the text. A page's text is cut at those characters, not at heights, so a
heading in the right column of a page of two does not split the left one. A page's first or last
line that recurs on at least :data:`RUNNING_LINE_PAGES` pages with only its numbers changed is a
running header or footer ("Chapter 3: Basic Shell Features 35", "GNU Bash 5.2 … 4") and its
characters are left out: repeated in every chunk it would match every query about a chapter's name,
and it splits the paragraphs that cross a page. So is a browser's print header ("12/7/26, 10:15 AM
… title") and footer ("https://… 1/2") on a document of any length.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RUNNING_LINE_PAGES",
    "Box",
    "Heading",
    "Line",
    "PageLines",
    "SectionStart",
    "clean",
    "font_headings",
    "heading_sizes",
    "outline_headings",
    "page_lines",
    "page_sections",
    "page_text",
    "running_lines",
]

Box = tuple[float, float, float, float]
"""A page's box in PDF points: left, bottom, right, top."""

# PDFium marks a word hyphenated across a line end with a soft hyphen before the line break: \x02
# in a bounded text, U+FFFE in a range of characters. The word is joined again, or BM25 would index
# "other" and "wise" for "otherwise". Glyphs of the private-use area (pieces of drawn brackets in
# man pages) carry no text.
_SOFT_HYPHEN = re.compile(r"[\x02\ufffe]\r?\n?")
_PRIVATE_USE = re.compile(r"[\ue000-\uf8ff]")
_NUMBERS = re.compile(r"\d+")

RUNNING_LINE_PAGES = 3
"""A first or last line on this many pages (numbers aside) is a running header or footer."""
# A line set this much larger than the text is a heading, in a PDF without an outline (groff sets
# a man page's section names at 10.9 points over 10); a longer line than _HEADING_CHARS is text.
_HEADING_SCALE = 1.05
_HEADING_CHARS = 100
# A heading's title may have a label before it on its line: a section number, or a word and a number
# or letter ("3.6.1", "Chapter 3:", "Appendix B", "Part II").
_LABEL = re.compile(r"(?:\w+\s+)?(?:[A-Z]?[\d.]*\d[\w.]*|[A-Z]|[IVXLC]+)[.:]?\s+$|$")
# How far outside a line's height a character's middle may be and still be on it (points).
_ON_LINE_SLACK = 0.5
# How far above the height an outline destination points at a title may start (points): typesetters
# point at the heading's top or a little below it.
_DESTINATION_SLACK = 2.0
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
class Line:
    """One line of a page: the height it spans (PDF points from the page's bottom), the font size of
    its smallest run, and its runs' boxes."""

    bottom: float
    top: float
    size: float
    runs: tuple[Box, ...]


@dataclass(frozen=True, slots=True)
class PageLines:
    """A page's lines, top first, and the text of its first and last."""

    lines: list[Line]
    first_text: str
    last_text: str

    @property
    def first(self) -> str:
        """The first line's key as a running line: its text with numbers masked."""
        return _running_key(self.first_text)

    @property
    def last(self) -> str:
        """The last line's key as a running line."""
        return _running_key(self.last_text)


def _run_char(textpage: Any, rect: Box) -> int | None:
    """The index of a character of a run of text: at its left end, else its middle, else its right
    end (a run may hold a wide gap, as a header does between its title and its page number)."""
    left, bottom, right, top = rect
    middle, half = (bottom + top) / 2, (top - bottom) / 2
    for x in (left + 0.5, (left + right) / 2, right - 0.5):
        index = textpage.get_index(x, middle, 1.0, half)
        if index is not None and index >= 0:
            return int(index)
    return None


def _font_size(textpage: Any, rect: Box) -> float:
    import pypdfium2.raw as pdfium_c

    index = _run_char(textpage, rect)
    return 0.0 if index is None else float(pdfium_c.FPDFText_GetFontSize(textpage.raw, index))


def _lines(textpage: Any, sizes: bool) -> list[Line]:
    """The page's lines, top first: runs of text whose middles lie within one another's height
    (with their font sizes when ``sizes``; 0 otherwise)."""
    runs = sorted((textpage.get_rect(index) for index in range(textpage.count_rects())), key=lambda rect: -rect[3])
    lines: list[Line] = []
    for rect in runs:
        size = _font_size(textpage, rect) if sizes else 0.0
        line = lines[-1] if lines else None
        if line is not None and line.bottom <= (rect[1] + rect[3]) / 2 <= line.top:
            lines[-1] = Line(
                min(line.bottom, rect[1]), max(line.top, rect[3]), min(line.size, size), (*line.runs, rect)
            )
        else:
            lines.append(Line(rect[1], rect[3], size, (rect,)))
    return lines


def _line_text(textpage: Any, box: Box, line: Line) -> str:
    return " ".join(clean(textpage.get_text_bounded(box[0], line.bottom, box[2], line.top)).split())


def _running_key(text: str) -> str:
    return _NUMBERS.sub("#", text) if len(text) <= _RUNNING_LINE_CHARS else ""


def page_lines(textpage: Any, box: Box, *, sizes: bool) -> PageLines:
    """A page's lines and the keys of its first and last; font sizes only when ``sizes`` (they are
    read for a PDF without an outline, whose headings are found by them)."""
    lines = _lines(textpage, sizes)
    if not lines:
        return PageLines([], "", "")
    return PageLines(lines, _line_text(textpage, box, lines[0]), _line_text(textpage, box, lines[-1]))


# What a browser prints at the top and the bottom of every page of a saved web page: the date and
# time (and the title) above, the address and "page/pages" below. A team's first documents are
# often such one- or two-page prints, fewer pages than a running line needs.
_PRINT_HEADER = re.compile(r"^\d{1,2}/\d{1,2}/\d{2,4},?\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?\b")
_PRINT_FOOTER = re.compile(r"^(?:https?|file)://\S+.*\s\d+\s?/\s?\d+$|^\d+\s?/\s?\d+\s+(?:https?|file)://\S+$")


def running_lines(pages: list[PageLines]) -> tuple[set[str], set[str]]:
    """The first-line and last-line keys that recur on enough pages to be running headers and
    footers, and those of a browser's print header and footer on any page."""
    firsts = Counter(page.first for page in pages if page.first)
    lasts = Counter(page.last for page in pages if page.last)
    printed_heads = {page.first for page in pages if page.first and _PRINT_HEADER.match(page.first_text)}
    printed_feet = {page.last for page in pages if page.last and _PRINT_FOOTER.match(page.last_text.strip())}
    return (
        {key for key, count in firsts.items() if count >= RUNNING_LINE_PAGES} | printed_heads,
        {key for key, count in lasts.items() if count >= RUNNING_LINE_PAGES} | printed_feet,
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


Heading = tuple[int, tuple[str, ...]]
"""A heading on a page: the index of the character its title starts at, and its heading path."""


def font_headings(textpage: Any, box: Box, page: PageLines, levels: dict[float, int], path: list[str]) -> list[Heading]:
    """The page's headings by font size; ``path`` is the heading path so far, carried across pages."""
    found = []
    for line in page.lines:
        level = levels.get(round(line.size, 1))
        text = _line_text(textpage, box, line) if level is not None else ""
        if level is None or not text or len(text) > _HEADING_CHARS:
            continue
        index = _run_char(textpage, min(line.runs, key=lambda run: run[0]))  # where the line starts
        if index is None:
            continue
        path[:] = [*path[:level], text]
        found.append((index, tuple(path)))
    return found


def page_text(textpage: Any) -> str:
    """The page's characters in drawing order, one string character each where PDFium's string and
    character list agree (see :func:`page_sections`)."""
    count = textpage.count_chars()
    return str(textpage.get_text_range(0, count)) if count else ""


def outline_headings(textpage: Any, text: str, starts: list[SectionStart]) -> list[Heading]:
    """The outline's headings on this page, each at the character where its title is drawn: after
    the heading before, at or below the height the destination points at, and at the start of a
    line where it is anywhere (a heading, not a mention of it in the text). A title not on the page
    (drawn as an image, reworded in the outline) starts its section with the page."""
    if not starts:
        return []
    found = []
    after = -1
    for start in starts:
        index = _title_at(textpage, text, start, after)
        if index is None:
            found.append((0, start.path))
            continue
        found.append((index, start.path))
        after = index
    return found


def _title_at(textpage: Any, text: str, start: SectionStart, after: int) -> int | None:
    searcher = textpage.search(start.path[-1], match_case=False)
    first = None
    try:
        while (match := searcher.get_next()) is not None:
            index = int(match[0])
            above = start.top is not None and textpage.get_charbox(index)[3] > start.top + _DESTINATION_SLACK
            if index <= after or above:
                continue
            if _line_start(text, index) != index or index == 0 or text[index - 1] in "\r\n":
                return index  # a heading starts its line; a mention of its title sits in one
            first = index if first is None else first
        return first
    finally:
        searcher.close()


def _line_start(text: str, index: int) -> int:
    """``index`` moved back to the start of its line when only a heading's label is before it there
    ("3.6.1 ", "Chapter 3: ", "Appendix B "); else ``index``."""
    start = max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
    return start if _LABEL.match(text[start:index]) else index


def _normal_title(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_heading_line(piece: str, title: str) -> bool:
    """Whether a piece of text is only the heading ``title`` (normalised), its label aside."""
    text = " ".join(clean(piece).split())
    label = text[: len(text) - len(title)]
    return _normal_title(text[len(label) :]) == title and _LABEL.match(label) is not None


def _line_chars(textpage: Any, count: int, line: Line) -> set[int]:
    """The indices of a line's characters: from a character of each run, those next to it
    in drawing order whose middle lies within the line's height (the spaces and line break PDFium
    adds sit on the line's baseline, so they count)."""

    def on_line(index: int) -> bool:
        _, low, _, high = textpage.get_charbox(index)
        return bool(line.bottom - _ON_LINE_SLACK <= (low + high) / 2 <= line.top + _ON_LINE_SLACK)

    found: set[int] = set()
    for run in line.runs:
        index = _run_char(textpage, run)
        if index is None or index in found:
            continue
        first = last = index
        while first > 0 and on_line(first - 1):
            first -= 1
        while last + 1 < count and on_line(last + 1):
            last += 1
        found.update(range(first, last + 1))
    return found


def page_sections(
    textpage: Any,
    text: str,
    box: Box,
    running: tuple[Line | None, Line | None],
    headings: list[Heading],
    section: tuple[str, ...],
) -> tuple[list[tuple[tuple[str, ...], str]], tuple[str, ...]]:
    """The page's text (:func:`page_text`), running lines left out, cut at its headings' characters:
    (section, text) pieces, and the section in force at the page's end.

    ``running`` is the page's running header and footer lines (None where it has none), whose
    characters are left out. A piece that is only its heading's title (a chapter title followed at
    once by its first section's) is left out: its title is in the path of every section under it,
    as headings are in the other formats.
    """
    count = textpage.count_chars()
    if len(text) != count:
        # PDFium's string and its character list disagree (rare, outside UCS-2): the page is read
        # whole between its running lines, under the last heading that starts on it.
        for _, path in headings:
            section = path
        header, footer = running
        top = box[3] if header is None else header.bottom
        bottom = box[1] if footer is None else footer.top
        return [(section, textpage.get_text_bounded(box[0], bottom, box[2], top))], section
    dropped = set().union(*(_line_chars(textpage, count, line) for line in running if line is not None))
    kept = [index not in dropped for index in range(count)]
    # A heading starts at its line's start: its section number ("3.6.1 ") is drawn before its title.
    headings = [(_line_start(text, index), path) for index, path in headings]
    pieces: list[tuple[tuple[str, ...], str]] = []
    title = ""
    begin = 0
    for index, path in [*sorted(headings, key=lambda heading: heading[0]), (count, section)]:
        piece = "".join(char for char, keep in zip(text[begin:index], kept[begin:index], strict=True) if keep)
        if piece.strip() and not (title and _is_heading_line(piece, title)):
            pieces.append((section, piece))
        if index < count:
            section, title, begin = path, _normal_title(path[-1]), index
    return pieces, section
