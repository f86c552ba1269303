"""Parsers and guards on real files: every format read with its sections or pages, every bad input refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivemem.errors import DocumentError
from hivemem.knowledge import DocumentFormat
from tests.documents import BAD_DOCUMENTS, GOOD_DOCUMENTS, write_bad, write_good
from workers.documents import GuardLimits, format_of, parse_document
from workers.documents.markdown import parse_markdown_text

pytest.importorskip("pypdfium2", reason="the ingest extra is not installed")
pytest.importorskip("fpdf", reason="fpdf2 (dev extra) makes the PDF fixtures")

LIMITS = GuardLimits(max_bytes=1_000_000, max_inflated_bytes=200 * 1024 * 1024)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_good(tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_bad(tmp_path_factory.mktemp("bad"), big_bytes=LIMITS.max_bytes + 1)


def _parse(path: Path):  # type: ignore[no-untyped-def]
    return parse_document(path.read_bytes(), path.name, format_of(path.name), LIMITS)


@pytest.mark.parametrize("name", sorted(GOOD_DOCUMENTS))
def test_each_format_gives_text_with_its_section_or_page(good: dict[str, Path], name: str) -> None:
    rare, _, where = GOOD_DOCUMENTS[name]
    parsed = _parse(good[name])
    holding = [b for b in parsed.blocks if rare in b.text]
    assert holding, f"{rare!r} not found in {name}"
    if isinstance(where, int):
        assert holding[0].page == where
    elif where:
        assert where in holding[0].section
    assert parsed.title


def test_the_pdf_outline_gives_sections_and_pages(good: dict[str, Path]) -> None:
    parsed = _parse(good["reactor.pdf"])
    assert parsed.title == "Reactor operations manual"
    assert [(b.section, b.page) for b in parsed.blocks] == [
        (("Introduction",), 1),
        (("Cooling",), 2),
        (("Shutdown",), 3),
    ]


def test_docx_keeps_body_order_headings_and_tables(good: dict[str, Path]) -> None:
    parsed = _parse(good["deploy.docx"])
    assert parsed.format is DocumentFormat.DOCX and parsed.title == "Deploy guide"
    assert [b.section for b in parsed.blocks] == [("Releasing",), ("Rollback",), ("Rollback",)]
    assert parsed.blocks[-1].text == "env | host\nprod | app-1"


def test_html_keeps_the_article_and_drops_navigation_and_banners(good: dict[str, Path]) -> None:
    parsed = _parse(good["cache.html"])
    text = parsed.text
    assert parsed.title == "Cache notes"
    assert "plinkwort" in text and "purge endpoint" in text
    assert "Login" not in text and "cookies" not in text and "Copyright" not in text
    assert ("Caching", "Invalidation") in [b.section for b in parsed.blocks]


def test_markdown_front_matter_setext_headings_and_whole_code_fences(good: dict[str, Path]) -> None:
    parsed = _parse(good["ops.md"])
    assert parsed.title == "Operations notes"
    assert "owner: ops" not in parsed.text
    fence = next(b for b in parsed.blocks if b.text.startswith("```"))
    assert fence.section == ("Operations notes", "Restore")
    assert "restore --verify" in fence.text and fence.text.endswith("```")


@pytest.mark.parametrize(
    ("front", "title"),
    [
        ("title: Ops handbook", "Ops handbook"),
        ('title: "On-call: the first day"', "On-call: the first day"),
        ("", "Runbook"),
    ],
)
def test_a_markdown_front_matters_title_is_the_documents_title(front: str, title: str) -> None:
    parsed = parse_markdown_text(f"---\n{front}\nowner: ops\n---\n# Runbook\n\nRestart the queue.\n", "runbook.md")
    assert parsed.title == title
    assert parsed.text == "Restart the queue." and parsed.blocks[0].section == ("Runbook",)


def test_text_in_latin_1_is_decoded(good: dict[str, Path]) -> None:
    parsed = _parse(good["notes.txt"])
    assert "Caf\u00e9 au lait" in parsed.text and "cr\u00e8me br\u00fbl\u00e9e" in parsed.text


@pytest.mark.parametrize("name", sorted(BAD_DOCUMENTS))
def test_each_bad_document_is_refused_with_its_reason(bad: dict[str, Path], name: str) -> None:
    path = bad[name]
    with pytest.raises(DocumentError) as refused:
        parse_document(path.read_bytes(), path.name, format_of(path.name), LIMITS)
    assert BAD_DOCUMENTS[name] in refused.value.reason
    assert refused.value.source == name


def test_a_docx_over_the_inflated_limit_is_refused_even_at_a_plausible_ratio(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "huge.docx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("word/document.xml", b"x" * 200_000)
    with pytest.raises(DocumentError, match="inflate to"):
        parse_document(
            path.read_bytes(),
            path.name,
            DocumentFormat.DOCX,
            GuardLimits(max_bytes=1_000_000, max_inflated_bytes=100_000),
        )


def test_a_pdf_named_as_text_and_text_named_as_pdf(good: dict[str, Path]) -> None:
    with pytest.raises(DocumentError, match="binary content"):
        parse_document(good["reactor.pdf"].read_bytes(), "manual.txt", DocumentFormat.TEXT, LIMITS)
    with pytest.raises(DocumentError, match="no %PDF- header"):
        parse_document(good["ops.md"].read_bytes(), "ops.pdf", DocumentFormat.PDF, LIMITS)
