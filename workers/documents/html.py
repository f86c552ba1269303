"""HTML: the page's content, in reading order, under its headings, without menus, banners and footers.

Why not trafilatura's Markdown output, measured on the Debian Reference (DocBook HTML): it drops
headings that sit in a title block (``<div class="titlepage"><h2>``), so every chunk of a chapter
lost its section, and it writes a code block's root prompt (``# apt-get …``) as a Markdown heading,
which then cut chapters at commands. So the page is read with lxml's HTML parser, and:

- the content is ``<main>`` or ``<article>`` when the page has one, else ``<body>``;
- navigation, headers, footers, asides, forms, scripts, and elements whose class or id names a
  cookie banner, a menu, a sidebar or the like are dropped;
- ``h1``-``h6`` set the section path; paragraphs, list items, quotes and definitions are blocks;
  ``<pre>`` is one block with its lines kept; a table is one block, a row per line, ``|`` between
  cells;
- the tree is walked without recursion, so a page nested 20,000 deep costs time, not the stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from hivemem.errors import DocumentError
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument
from workers.documents.text import decode

__all__ = ["parse_html"]

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_DROPPED = {
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "button", "svg",
    "template", "iframe", "object", "select", "head",
}  # fmt: skip
_BLOCKS = {"p", "li", "dd", "dt", "blockquote", "figcaption", "address", "caption", "summary"}
_BOILERPLATE = re.compile(
    r"cookie|consent|banner|\bnav|menu|sidebar|footer|breadcrumb|advert|social|share|popup|modal",
    re.I,
)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


def _clean(text: str) -> str:
    return "\n".join(line.strip() for line in _SPACES.sub(" ", text).splitlines() if line.strip())


def _flat(element: Any) -> str:
    # Inline markup adds no space ("<code>apt</code>(8)" is "apt(8)"); line breaks inside become spaces.
    return _SPACES.sub(" ", "".join(element.itertext()).replace("\n", " ")).strip()


def _is_boilerplate(element: Any) -> bool:
    if not isinstance(element.tag, str):
        return True  # comments and processing instructions
    if element.tag in _DROPPED:
        return True
    marks = f"{element.get('class', '')} {element.get('id', '')} {element.get('role', '')}"
    return bool(marks.strip()) and bool(_BOILERPLATE.search(marks))


def _table(element: Any) -> str:
    rows = []
    for row in element.iter("tr"):
        cells = [_flat(cell) for cell in row if isinstance(cell.tag, str) and cell.tag in ("td", "th")]
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _holds_blocks(element: Any) -> bool:
    """Whether blocks sit inside this one (a list item holding paragraphs): then its children are read."""
    return any(
        child is not element and isinstance(child.tag, str) and (child.tag in _BLOCKS or child.tag in ("pre", "table"))
        for child in element.iter()
    )


def _walk(root: Any) -> Iterator[tuple[str, int, str]]:
    """(kind, heading level, text) in document order: kind is ``heading`` or ``block``."""
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        element, done = stack.pop()
        if done:  # the text after an element belongs to its parent's flow
            tail = _clean(element.tail or "")
            if tail:
                yield "block", 0, tail
            continue
        if element is not root and _is_boilerplate(element):
            stack.append((element, True))
            continue
        tag = element.tag
        if tag in _HEADINGS:
            text = _flat(element)
            if text:
                yield "heading", _HEADINGS[tag], text
        elif tag == "pre":
            text = "\n".join(line.rstrip() for line in "".join(element.itertext()).strip("\n").splitlines())
            if text.strip():
                yield "block", 0, text
        elif tag == "table":
            text = _table(element)
            if text:
                yield "block", 0, text
        elif tag in _BLOCKS and not _holds_blocks(element):
            text = _flat(element)
            if text:
                yield "block", 0, text
        else:
            own = _clean(element.text or "")
            if own:
                yield "block", 0, own
            stack.append((element, True))
            stack.extend((child, False) for child in reversed(element))
            continue
        stack.append((element, True))


def parse_html(data: bytes, name: str) -> ParsedDocument:
    """An HTML page's content under its headings."""
    import lxml.html
    from lxml import etree

    # Decoded here (BOM, UTF-8, detector), then handed to lxml as UTF-8 with the encoding named, so
    # a page's own <meta charset> cannot contradict what was decoded.
    page = decode(data, name).encode("utf-8")
    parser = lxml.html.HTMLParser(encoding="utf-8", recover=True)
    try:
        tree = lxml.html.document_fromstring(page, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise DocumentError(f"cannot parse this HTML ({exc})", source=name) from exc
    if any(error.type_name == "ERR_RESOURCE_LIMIT" for error in parser.error_log):
        # libxml2 stops descending at 256 levels and drops what lies deeper: refuse, not index half.
        raise DocumentError("refused: the page is nested deeper than 256 levels", source=name)
    title = _flat(tree.find(".//title")) if tree.find(".//title") is not None else ""
    candidates = [e for e in tree.iter("main", "article") if not _is_boilerplate(e)]
    body = tree.find("body")
    root = max(candidates, key=lambda e: len(_flat(e))) if candidates else (tree if body is None else body)
    path: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for kind, level, text in _walk(root):
        if kind == "heading":
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, text)]
            title = title or text
        else:
            blocks.append(Block(text, tuple(t for _, t in path)))
    if not blocks:
        raise DocumentError("no text to index (the page has no readable content)", source=name)
    return ParsedDocument((title or blocks[0].text.split("\n", 1)[0])[:200], DocumentFormat.HTML, tuple(blocks))
