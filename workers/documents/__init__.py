"""Reading documents: guards first (:mod:`.guards`), then one parser per format, imported lazily.

The parsers' libraries are the ``[ingest]`` extra; each is imported only when a document of its
format arrives, so a server that never reads a PDF never loads PDFium.
"""

from __future__ import annotations

from collections.abc import Callable

from hivemem.knowledge import DocumentFormat, ParsedDocument
from workers.documents.guards import EXTENSIONS, GuardLimits, check_document, format_of

__all__ = ["EXTENSIONS", "GuardLimits", "format_of", "parse_document"]


def _parser(fmt: DocumentFormat) -> Callable[[bytes, str], ParsedDocument]:
    if fmt is DocumentFormat.PDF:
        from workers.documents.pdf import parse_pdf

        return parse_pdf
    if fmt is DocumentFormat.DOCX:
        from workers.documents.docx import parse_docx

        return parse_docx
    if fmt is DocumentFormat.HTML:
        from workers.documents.html import parse_html

        return parse_html
    if fmt is DocumentFormat.MARKDOWN:
        from workers.documents.markdown import parse_markdown

        return parse_markdown
    from workers.documents.text import parse_text

    return parse_text


def parse_document(data: bytes, name: str, fmt: DocumentFormat, limits: GuardLimits) -> ParsedDocument:
    """Check ``data`` and parse it as ``fmt``. Raises ``DocumentError`` with the reason it cannot be read."""
    check_document(data, name, fmt, limits)
    return _parser(fmt)(data, name)
