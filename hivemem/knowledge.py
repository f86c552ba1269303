"""The knowledge model: documents an agent read, as parsed blocks, stored sources and their chunks.

A document (a file, a URL, or text stored under a key) is parsed into :class:`Block` s, each with
the heading path it sits under and, for a PDF, its page. Its text, the blocks joined by blank
lines, is what ``knowledge read`` returns and what every chunk's offsets point into. A stored
document is a :class:`KnowledgeSource` (one per scope and uri) with its :class:`KnowledgeChunk` s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "BLOCK_SEPARATOR",
    "Block",
    "Document",
    "DocumentFormat",
    "KnowledgeChunk",
    "KnowledgeSource",
    "ParsedDocument",
    "SectionStart",
    "chunk_id",
    "chunk_section_starts",
    "sections_between",
]

BLOCK_SEPARATOR = "\n\n"


class DocumentFormat(StrEnum):
    """The formats hivemem reads."""

    PDF = "pdf"
    DOCX = "docx"
    HTML = "html"
    MARKDOWN = "markdown"
    TEXT = "text"


@dataclass(frozen=True, slots=True)
class Document:
    """A document to index: where it comes from (``uri``), a name for its format, and its bytes."""

    uri: str
    name: str
    data: bytes
    content_type: str | None = None
    format: DocumentFormat | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """A run of text (a paragraph, a list, a table, a code block) under one heading path."""

    text: str
    section: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True, slots=True)
class SectionStart:
    """Where, in a document's text, a heading path (and for a PDF a page) comes into force."""

    start: int
    section: tuple[str, ...]
    page: int | None = None


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """What a parser makes of a document: its title and its blocks in reading order."""

    title: str
    format: DocumentFormat
    blocks: tuple[Block, ...]

    @property
    def text(self) -> str:
        """The document's text: its blocks joined by blank lines (offsets point into this)."""
        return BLOCK_SEPARATOR.join(block.text for block in self.blocks)

    def section_starts(self) -> list[SectionStart]:
        """Where each run of blocks under one heading path and page begins in :attr:`text`."""
        starts: list[SectionStart] = []
        offset = 0
        for block in self.blocks:
            if not starts or (starts[-1].section, starts[-1].page) != (block.section, block.page):
                starts.append(SectionStart(offset, block.section, block.page))
            offset += len(block.text) + len(BLOCK_SEPARATOR)
        return starts


@dataclass(frozen=True, slots=True)
class KnowledgeSource:
    """One indexed document in one scope.

    ``uri`` is an absolute file path, an http(s) URL, or ``key:NAME`` for text stored under a key.
    ``content_hash`` is the sha256 of the document's bytes: an unchanged document is not indexed
    again. ``last_error`` is the reason the latest attempt to index it failed (its chunks, if
    any, are those of the last attempt that succeeded).
    """

    scope: str
    uri: str
    title: str
    format: DocumentFormat
    content_hash: str
    size: int
    fetched_at: datetime
    indexed_at: datetime | None
    chunk_count: int
    last_error: str | None = None

    @property
    def searchable(self) -> bool:
        """Whether it has chunks to search: what the status and the scope list count as a document."""
        return self.chunk_count > 0

    @property
    def failed(self) -> bool:
        """Whether the latest attempt to index it failed (``last_error`` says why)."""
        return bool(self.last_error)


@dataclass(frozen=True, slots=True)
class KnowledgeChunk:
    """A searchable piece of a document, with what a citation needs.

    ``section`` is the heading path it sits under, ``page`` its first page (PDF, 1-based), and
    ``start``/``end`` its character offsets in the document's text.
    """

    id: str
    scope: str
    uri: str
    ordinal: int
    text: str
    title: str
    section: tuple[str, ...]
    page: int | None
    start: int
    end: int
    embedding: tuple[float, ...] | None = field(default=None, repr=False)

    @property
    def context(self) -> str:
        """The chunk as the embedder reads it: the document title and section path before the text."""
        heading = " > ".join(part for part in (self.title, *self.section) if part)
        return f"{heading}\n{self.text}" if heading else self.text


def chunk_section_starts(chunks: Sequence[KnowledgeChunk]) -> list[SectionStart]:
    """The section starts of a stored document, from its chunks (a chunk never crosses a heading;
    its page is the page it begins on)."""
    starts: list[SectionStart] = []
    for chunk in sorted(chunks, key=lambda c: c.start):
        if not starts or (starts[-1].section, starts[-1].page) != (chunk.section, chunk.page):
            starts.append(SectionStart(chunk.start, chunk.section, chunk.page))
    return starts


def sections_between(starts: list[SectionStart], offset: int, end: int) -> list[SectionStart]:
    """The section starts a page of text ``[offset, end)`` shows: the one in force at ``offset``
    (moved to it) and every one that begins inside the page. ``starts`` is in text order."""
    shown: list[SectionStart] = []
    for start in starts:
        if start.start <= offset:
            shown[:] = [SectionStart(offset, start.section, start.page)]
        elif start.start < end:
            shown.append(start)
        else:
            break
    return shown


def chunk_id(scope: str, uri: str, content_hash: str, ordinal: int) -> str:
    """A chunk's id: the same document content always gives the same ids (writes are idempotent)."""
    digest = hashlib.sha256(f"{scope}\x00{uri}\x00{content_hash}\x00{ordinal}".encode()).hexdigest()
    return f"k{digest[:31]}"
