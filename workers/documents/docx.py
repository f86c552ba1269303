"""DOCX: paragraphs and tables in body order (python-docx), sections from heading styles.

The heading level is read from the paragraph's style id (``Heading2``) straight from the XML:
python-docx's style lookup is a third of its parse time. A ``Title`` paragraph names the
document. Tables become one block each, a row per line, cells separated by `` | ``.
The container was checked before this runs (:mod:`workers.documents.guards`).
"""

from __future__ import annotations

import io
import re
import zipfile

from hivemem.errors import DocumentError
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument

__all__ = ["parse_docx"]

_HEADING = re.compile(r"^heading(\d)$", re.I)


def _table_text(table: object) -> str:
    rows = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells = [cell.text.strip() for cell in row.cells]
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def parse_docx(data: bytes, name: str) -> ParsedDocument:
    """A Word document's text under its headings."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentError(
            f"cannot read this .docx, it is damaged ({type(exc).__name__}: {exc})", source=name
        ) from exc
    except Exception as exc:  # lxml's XMLSyntaxError and kin: a damaged part
        raise DocumentError(f"cannot read this .docx, a part is damaged ({type(exc).__name__})", source=name) from exc
    path: list[tuple[int, str]] = []
    blocks: list[Block] = []
    title = (document.core_properties.title or "").strip()
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            text = _table_text(item)
            if text:
                blocks.append(Block(text, tuple(t for _, t in path)))
            continue
        text = item.text.strip()
        if not text:
            continue
        style = item._p.style or ""
        heading = _HEADING.match(style)
        if heading:
            level = int(heading.group(1))
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, text)]
            title = title or text
        elif style.lower() == "title":
            title = title or text
        else:
            blocks.append(Block(text, tuple(t for _, t in path)))
    if not blocks:
        raise DocumentError("no text to index (the document has no paragraphs or tables)", source=name)
    return ParsedDocument((title or blocks[0].text.split("\n", 1)[0])[:200], DocumentFormat.DOCX, tuple(blocks))
