"""Markdown: blocks under their heading paths, from markdown-it-py's tokens.

Each top-level block (paragraph, list, table, quote, code fence) is cut from the source by the
line range markdown-it reports, so a code fence stays whole and a list keeps its markers. ATX and
setext headings both set the path; YAML front matter (``---`` … ``---`` first) is dropped, its
``title`` kept as the document's title.
"""

from __future__ import annotations

import re

from hivemem.errors import DocumentError
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument
from workers.documents.text import decode

__all__ = ["parse_markdown", "parse_markdown_text"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
# A front matter's plain ``title: …`` line (quoted or not); other YAML forms leave the first heading.
_FRONT_TITLE = re.compile(r"^title:[ \t]*(?P<q>[\"']?)(?P<title>[^\n]*?)(?P=q)[ \t]*$", re.M)
_BLOCK_OPENERS = {
    "paragraph_open",
    "bullet_list_open",
    "ordered_list_open",
    "blockquote_open",
    "table_open",
    "fence",
    "code_block",
    "html_block",
}


def parse_markdown_text(source: str, name: str, fmt: DocumentFormat = DocumentFormat.MARKDOWN) -> ParsedDocument:
    """Markdown text as blocks; the title is the front matter's, else the first heading, else the first line."""
    from markdown_it import MarkdownIt

    source = source.replace("\r\n", "\n").replace("\r", "\n")
    front = _FRONT_MATTER.match(source)
    named = _FRONT_TITLE.search(front.group()) if front else None
    source = source[front.end() :] if front else source
    lines = source.split("\n")
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    path: list[tuple[int, str]] = []
    blocks: list[Block] = []
    headings: list[str] = []
    title = named.group("title").strip()[:200] if named else ""
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        if token.type == "heading_open":
            level = int(token.tag[1])
            heading = tokens[index + 1].content.strip()
            path = [(lvl, text) for lvl, text in path if lvl < level] + [(level, heading)]
            headings.append(heading)
            title = title or heading
        elif token.type in _BLOCK_OPENERS:
            text = "\n".join(lines[token.map[0] : token.map[1]]).strip()
            if text:
                blocks.append(Block(text, tuple(text for _, text in path)))
    if not blocks and headings:
        blocks = [Block(heading) for heading in headings]  # headings alone are still text worth finding
    if not blocks and source.strip():
        blocks = [Block(source.strip())]  # markup alone (a rule, a stray marker): keep the text as it is
    if not blocks:
        raise DocumentError("no text to index (the document holds only whitespace)", source=name)
    return ParsedDocument(title or blocks[0].text.split("\n", 1)[0][:200], fmt, tuple(blocks))


def parse_markdown(data: bytes, name: str) -> ParsedDocument:
    """A Markdown file."""
    return parse_markdown_text(decode(data, name), name)
