"""Heading-aware chunking: offsets point into the document's text, no chunk crosses a heading."""

from __future__ import annotations

import itertools
import random

import pytest

from hivemem.chunking import chunk_document
from hivemem.knowledge import Block, DocumentFormat, ParsedDocument


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
