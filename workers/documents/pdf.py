"""PDF: page text from PDFium (pypdfium2), sections from the document's outline.

pypdfium2 is one permissively licensed wheel and reads ~1,170 pages/s here (pypdf ~216).
Each page's text is split into paragraphs; a page's section path is the outline entry that
starts on or before it, with its parents. A PDF without an outline has no sections (every chunk
still cites its page). Refused clearly: a PDF that needs a password, a damaged file, and a PDF
with no text layer (a scan: it needs OCR, which hivemem does not do).
"""

from __future__ import annotations

import re

from hivemem.errors import DocumentError
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument
from workers.documents.text import paragraphs

__all__ = ["parse_pdf"]

_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
# PDFium marks a word hyphenated across a line end with \x02 before the line break: the word is
# joined again, or BM25 would index "other" and "wise" for "otherwise". Glyphs of the private-use
# area (pieces of drawn brackets in man pages) carry no text.
_SOFT_HYPHEN = re.compile(r"\x02\r?\n?")
_PRIVATE_USE = re.compile(r"[\ue000-\uf8ff]")


def _clean(text: str) -> str:
    # groff typesets a hyphen-minus as U+2212 (man pages: "−−login"): read it as the "-" it was.
    return _PRIVATE_USE.sub("", _SOFT_HYPHEN.sub("", text)).replace("\r\n", "\n").replace("\u2212", "-")


def _page_sections(document: object, pages: int) -> list[tuple[str, ...]]:
    """The heading path in force on each page, from the outline (bookmarks)."""
    starts: list[tuple[int, tuple[str, ...]]] = []
    path: list[str] = []
    try:
        for item in document.get_toc(max_depth=6):  # type: ignore[attr-defined]
            title = (item.get_title() or "").strip()
            destination = item.get_dest()
            page = None if destination is None else destination.get_index()
            if page is None or not title:
                continue
            path = [*path[: item.level], title]
            starts.append((int(page), tuple(path)))
    except Exception:
        starts = []
    starts.sort(key=lambda start: start[0])
    sections: list[tuple[str, ...]] = []
    current: tuple[str, ...] = ()
    position = 0
    for page in range(pages):
        while position < len(starts) and starts[position][0] <= page:
            current = starts[position][1]
            position += 1
        sections.append(current)
    return sections


def parse_pdf(data: bytes, name: str) -> ParsedDocument:
    """A PDF's text layer, page by page."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == _PASSWORD_ERROR:
            raise DocumentError("refused: the PDF is encrypted and needs a password", source=name) from exc
        raise DocumentError(f"cannot read this PDF, it is damaged or not a PDF ({exc})", source=name) from exc
    try:
        pages = len(document)
        sections = _page_sections(document, pages)
        blocks: list[Block] = []
        for number in range(pages):
            page = document[number]
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_bounded()
            finally:
                textpage.close()
                page.close()
            blocks += [Block(part, sections[number], number + 1) for part in paragraphs(_clean(text))]
        metadata = document.get_metadata_dict(skip_empty=True)
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"cannot read this PDF, a page is damaged ({exc})", source=name) from exc
    finally:
        document.close()
    if not blocks:
        raise DocumentError(f"no text layer (needs OCR): none of its {pages} page(s) holds text", source=name)
    title = (metadata.get("Title") or "").strip() or blocks[0].text.split("\n", 1)[0]
    return ParsedDocument(title[:200], DocumentFormat.PDF, tuple(blocks))
