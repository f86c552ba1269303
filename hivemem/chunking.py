"""Heading-aware chunking: a parsed document into pieces of about ``size`` characters.

A chunk never crosses a heading: consecutive blocks under the same heading path form a section,
and each section is cut on its own, so a chunk's section path says exactly where it comes from.
A section longer than ``size`` is cut into windows that overlap by ``overlap`` characters; each
cut falls on the last paragraph break, else sentence end, else space in the second half of the
window, so words and (where possible) sentences stay whole. Offsets are those of the document's
text (:attr:`hivemem.knowledge.ParsedDocument.text`), so ``text[start:end]`` is the chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

from hivemem.knowledge import BLOCK_SEPARATOR, Block, ParsedDocument

__all__ = ["ChunkSpan", "chunk_document"]

_BREAKS = ("\n\n", ". ", "? ", "! ", "\n", "; ", ", ", " ")


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """One chunk before it is stored: its text, heading path, first page and offsets."""

    text: str
    section: tuple[str, ...]
    page: int | None
    start: int
    end: int


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    start: int
    end: int
    # (offset in the document, page) where each of the section's blocks starts
    pages: list[tuple[int, int | None]]


def _sections(blocks: tuple[Block, ...]) -> list[_Section]:
    sections: list[_Section] = []
    offset = 0
    for block in blocks:
        end = offset + len(block.text)
        if sections and sections[-1].path == block.section:
            sections[-1].end = end
            sections[-1].pages.append((offset, block.page))
        else:
            sections.append(_Section(block.section, offset, end, [(offset, block.page)]))
        offset = end + len(BLOCK_SEPARATOR)
    return sections


def _cut(text: str, start: int, limit: int, bound: int) -> int:
    """Where a window beginning at ``start`` ends: at ``bound`` if within ``limit``, else at most
    ``limit``, on a break if one is late enough."""
    if limit >= bound:
        return bound
    floor = start + (limit - start) // 2
    for mark in _BREAKS:
        at = text.rfind(mark, floor, limit)
        if at >= 0:
            return at + len(mark.rstrip()) if mark.strip() else at
    return limit


def _next_start(text: str, end: int, overlap: int, previous: int) -> int:
    """The next window's start: ``overlap`` before ``end``, moved forward to a word start."""
    start = max(previous + 1, end - overlap)
    space = text.find(" ", start, end)
    start = space + 1 if 0 <= space < end - 1 else start
    while start < end and text[start].isspace():
        start += 1
    return start


def _page_at(section: _Section, offset: int) -> int | None:
    page = section.pages[0][1]
    for block_start, block_page in section.pages:
        if block_start > offset:
            break
        page = block_page
    return page


def chunk_document(document: ParsedDocument, size: int = 1200, overlap: int = 300) -> list[ChunkSpan]:
    """The document's chunks in reading order. ``overlap`` must be below ``size``."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"chunk size {size} and overlap {overlap}: need size >= 1 and 0 <= overlap < size")
    text = document.text
    spans: list[ChunkSpan] = []
    for section in _sections(document.blocks):
        start = section.start
        while start < section.end:
            end = _cut(text, start, start + size, section.end)
            piece = text[start:end].strip()
            if piece:
                lead = len(text[start:end]) - len(text[start:end].lstrip())
                first = start + lead
                spans.append(ChunkSpan(piece, section.path, _page_at(section, first), first, first + len(piece)))
            if end >= section.end:
                break
            start = _next_start(text, end, overlap, start)
    return spans
