"""HTML: the page's main content, as Markdown, then read as Markdown (headings kept).

trafilatura (Apache-2.0 from 1.8.0) keeps the main content and drops navigation, footers and
cookie banners, which would otherwise fill every chunk of a web page with the same menu; its
Markdown output keeps headings, lists and tables, so the Markdown reader gives the section paths.
Comments are left out; formatting is kept because trafilatura writes
headings only with it. A page with no main content it can find is refused, as is one it cannot
parse (e.g. nested thousands deep).
"""

from __future__ import annotations

from hivemem.errors import DocumentError
from hivemem.knowledge import DocumentFormat, ParsedDocument
from workers.documents.markdown import parse_markdown_text
from workers.documents.text import decode

__all__ = ["parse_html"]


def parse_html(data: bytes, name: str) -> ParsedDocument:
    """An HTML page's main content."""
    import trafilatura

    page = decode(data, name)
    try:
        extracted = trafilatura.extract(
            page,
            output_format="markdown",
            include_comments=False,
            include_tables=True,
            include_formatting=True,
            with_metadata=False,
            favor_recall=True,
        )
        metadata = trafilatura.extract_metadata(page)
    except (RecursionError, ValueError, MemoryError) as exc:
        raise DocumentError(
            f"cannot parse this HTML ({type(exc).__name__}): too deeply nested or malformed", source=name
        ) from exc
    if not extracted or not extracted.strip():
        raise DocumentError("no text to index (the page has no readable content)", source=name)
    parsed = parse_markdown_text(extracted, name, DocumentFormat.HTML)
    title = (metadata.title if metadata is not None and metadata.title else "") or parsed.title
    return ParsedDocument(title.strip()[:200], DocumentFormat.HTML, parsed.blocks)
