"""PDF: page text from PDFium (pypdfium2), under the headings of the document's outline.

pypdfium2 is one permissively licensed wheel and reads ~1,170 pages/s here (pypdf ~216).
A page's text is cut where its headings start (:mod:`workers.documents.pdf_layout`), so text
under a heading cites that heading's path with its parents even when the heading starts halfway
down the page, and text before it keeps the section before. The headings are the outline's; a PDF without an
outline takes as headings the lines set larger than its text (a man page's section names). Running
headers and footers are left out. Refused clearly: a PDF that needs a password, a damaged file,
and a PDF with no text layer (a scan: it needs OCR, which hivemem does not do).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from hivemem.errors import DocumentError
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument
from workers.documents.pdf_layout import (
    Box,
    PageLines,
    SectionStart,
    clean,
    font_headings,
    heading_sizes,
    outline_headings,
    page_lines,
    page_sections,
    page_text,
    running_lines,
)
from workers.documents.text import paragraphs

__all__ = ["parse_pdf"]

_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
# Outline destinations that say a height: /XYZ left top zoom, and /FitH, /FitBH top.
_VIEW_XYZ, _VIEW_FITH, _VIEW_FITBH = 1, 3, 7


def _destination_top(destination: Any) -> float | None:
    try:
        mode, values = destination.get_view()
    except Exception:
        return None
    top = None
    if mode == _VIEW_XYZ and len(values) > 1:
        top = values[1]
    elif mode in (_VIEW_FITH, _VIEW_FITBH) and values:
        top = values[0]
    # An unset height reads as 0: the page's bottom would be no place for a heading.
    return float(top) if top else None


def _outline(document: Any) -> list[SectionStart]:
    """The outline's headings in reading order (page, then top to bottom)."""
    starts: list[SectionStart] = []
    path: list[str] = []
    try:
        for item in document.get_toc(max_depth=6):
            title = (item.get_title() or "").strip()
            destination = item.get_dest()
            page = None if destination is None else destination.get_index()
            if page is None or not title:
                continue
            path = [*path[: item.level], title]
            starts.append(SectionStart(int(page), _destination_top(destination), tuple(path)))
    except Exception:
        return []
    # sorted is stable: headings on one place of a page keep the outline's order.
    return sorted(starts, key=lambda start: (start.page, -(start.top if start.top is not None else float("inf"))))


class _Sections:
    """Reads the pages in order, carrying the section in force from one page to the next."""

    def __init__(self, pages: list[PageLines], outline: list[SectionStart]) -> None:
        self._pages = pages
        self._outline = outline
        self._next_heading = 0
        self._headers, self._footers = running_lines(pages)
        self._levels = {} if outline else heading_sizes(pages)
        self._section: tuple[str, ...] = ()
        self._path: list[str] = []

    def blocks(self, textpage: Any, box: Box, number: int) -> list[Block]:
        """Page ``number``'s paragraphs, each under its section, running lines left out."""
        page = self._pages[number]
        starts = []
        while self._next_heading < len(self._outline) and self._outline[self._next_heading].page <= number:
            starts.append(self._outline[self._next_heading])
            self._next_heading += 1
        text = page_text(textpage)
        if self._outline:
            headings = outline_headings(textpage, text, starts)
        else:
            headings = font_headings(textpage, box, page, self._levels, self._path)
        header = page.lines[0] if page.first in self._headers else None
        footer = page.lines[-1] if page.last in self._footers and len(page.lines) > 1 else None
        pieces, self._section = page_sections(textpage, text, box, (header, footer), headings, self._section)
        return [Block(part, path, number + 1) for path, text in pieces for part in paragraphs(clean(text))]


def parse_pdf(data: bytes, name: str) -> ParsedDocument:
    """A PDF's text layer, page by page, cut into sections at its outline's headings (or, without
    an outline, at lines set larger than its text)."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == _PASSWORD_ERROR:
            raise DocumentError("refused: the PDF is encrypted and needs a password", source=name) from exc
        raise DocumentError(f"cannot read this PDF, it is damaged or not a PDF ({exc})", source=name) from exc
    try:
        count = len(document)
        # Two passes: which lines run on every page, and which sizes are headings, is known only
        # once every page has been seen.
        outline = _outline(document)
        read_lines = partial(page_lines, sizes=not outline)
        pages = [_read_page(document, number, read_lines) for number in range(count)]
        sections = _Sections(pages, outline)
        blocks: list[Block] = []
        for number in range(count):
            blocks += _read_page(document, number, partial(sections.blocks, number=number))
        metadata = document.get_metadata_dict(skip_empty=True)
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"cannot read this PDF, a page is damaged ({exc})", source=name) from exc
    finally:
        document.close()
    if not blocks:
        raise DocumentError(f"no text layer (needs OCR): none of its {count} page(s) holds text", source=name)
    # Without a title in its metadata, a document is named by its first line, running header or not
    # (a man page's "BASH(1) General Commands Manual BASH(1)"): it is in every chunk's context.
    first_line = next((page.first_text for page in pages if page.first_text), "")
    title = (metadata.get("Title") or "").strip() or first_line or blocks[0].text.split("\n", 1)[0]
    return ParsedDocument(title[:200], DocumentFormat.PDF, tuple(blocks))


_Read = TypeVar("_Read")


def _read_page(document: Any, number: int, read: Callable[[Any, Box], _Read]) -> _Read:
    """``read(textpage, page box)`` of one page, its text page and page closed after."""
    page = document[number]
    textpage = page.get_textpage()
    try:
        return read(textpage, page.get_bbox())
    finally:
        textpage.close()
        page.close()
