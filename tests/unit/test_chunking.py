"""Heading-aware chunking: offsets point into the document's text, no chunk crosses a heading."""

from __future__ import annotations

import itertools
import random

import pytest

from hivemem.chunking import chunk_document
from hivemem.knowledge import (
    Block,
    DocumentFormat,
    KnowledgeChunk,
    ParsedDocument,
    SectionStart,
    chunk_section_starts,
    sections_between,
)


def _document(sections: int = 3, paragraphs: int = 6, seed: int = 7) -> ParsedDocument:
    rng = random.Random(seed)
    words = [
        "reactor", "coolant", "pump", "valve", "seal", "rod", "flow", "loop", "pressure", "shutdown", "start", "prime",
    ]  # fmt: skip
    blocks = []
    for s in range(sections):
        for p in range(paragraphs):
            sentences = [
                " ".join(rng.choice(words) for _ in range(rng.randint(5, 14))).capitalize() + "." for _ in range(6)
            ]
            blocks.append(Block(" ".join(sentences), ("Manual", f"Part {s}"), page=1 + (s * paragraphs + p) // 4))
    return ParsedDocument("Manual", DocumentFormat.PDF, tuple(blocks))


@pytest.mark.parametrize(("size", "overlap"), [(1200, 300), (400, 100), (200, 0)])
def test_chunks_are_slices_of_the_text_within_their_section(size: int, overlap: int) -> None:
    document = _document()
    text = document.text
    spans = chunk_document(document, size, overlap)
    assert spans
    for span in spans:
        assert text[span.start : span.end] == span.text
        assert len(span.text) <= size
        assert span.text == span.text.strip() and span.text
    # Every non-space character of every section is in some chunk.
    covered = set()
    for span in spans:
        covered.update(range(span.start, span.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_no_chunk_crosses_a_heading_and_sections_come_in_order() -> None:
    spans = chunk_document(_document(), 500, 100)
    sections = [s.section for s in spans]
    assert sections == sorted(sections, key=lambda path: int(path[1].split()[1]))
    for span in spans:
        part = span.section[1]
        assert "Part" in part


def test_long_sections_overlap_and_cut_at_sentence_ends() -> None:
    spans = chunk_document(_document(sections=1, paragraphs=10), 400, 120)
    for before, after in itertools.pairwise(spans):
        assert after.start < before.end, "consecutive chunks of one section overlap"
        assert before.end - after.start <= 120 + 20
    assert sum(s.text.endswith(".") for s in spans) >= len(spans) * 0.7


def test_pages_follow_the_blocks() -> None:
    document = _document(sections=1, paragraphs=8)
    spans = chunk_document(document, 300, 50)
    text_pages = {b.page for b in document.blocks}
    assert {s.page for s in spans} == text_pages
    assert [s.page for s in spans] == sorted(s.page or 0 for s in spans)


def test_a_short_document_is_one_chunk_and_bad_settings_are_refused() -> None:
    document = ParsedDocument("Note", DocumentFormat.TEXT, (Block("One short paragraph."),))
    [only] = chunk_document(document)
    assert (only.text, only.start, only.end, only.section, only.page) == ("One short paragraph.", 0, 20, (), None)
    with pytest.raises(ValueError, match="overlap"):
        chunk_document(document, 100, 100)


def test_a_documents_section_starts_are_where_its_headings_and_pages_change() -> None:
    document = ParsedDocument(
        "Ops",
        DocumentFormat.PDF,
        (Block("one", ("Deploy",), 1), Block("two", ("Deploy",), 1), Block("three", ("Deploy",), 2), Block("four")),
    )
    text = document.text
    starts = document.section_starts()
    assert starts == [
        SectionStart(0, ("Deploy",), 1),
        SectionStart(text.index("three"), ("Deploy",), 2),
        SectionStart(text.index("four"), (), None),
    ]
    # A page of text shows the section in force where it begins, then each one that begins in it.
    assert sections_between(starts, 2, 8) == [SectionStart(2, ("Deploy",), 1)]
    assert sections_between(starts, 2, text.index("four") + 1) == [SectionStart(2, ("Deploy",), 1), *starts[1:]]
    assert sections_between(starts, text.index("three"), len(text)) == starts[1:]


def test_a_stored_documents_section_starts_from_its_chunks_are_the_parsed_ones() -> None:
    document = _document()
    chunks = [
        KnowledgeChunk(f"c{i}", "s", "u", i, span.text, "Manual", span.section, span.page, span.start, span.end)
        for i, span in enumerate(chunk_document(document, 400, 100))
    ]
    from_chunks = chunk_section_starts(list(reversed(chunks)))  # in any order
    parsed = document.section_starts()

    def first_of_each_path(starts: list[SectionStart]) -> dict[tuple[str, ...], int]:
        first: dict[tuple[str, ...], int] = {}
        for start in starts:
            first.setdefault(start.section, start.start)
        return first

    # Each heading path begins where the parsed text says; a page is the one in force there.
    assert first_of_each_path(from_chunks) == first_of_each_path(parsed)
    for start in from_chunks:
        assert start.page == sections_between(parsed, start.start, start.start + 1)[0].page
