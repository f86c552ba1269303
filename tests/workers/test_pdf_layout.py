"""PDF layout, on PDFs written with fpdf2: sections that start halfway down a page, outlines that
point at the wrong height, running headers and footers, and headings found by font size."""

from __future__ import annotations

from typing import Any

import pytest

from hivemem.knowledge import ParsedDocument

pytest.importorskip("pypdfium2", reason="the ingest extra is not installed")
fpdf = pytest.importorskip("fpdf", reason="fpdf2 (dev extra) makes the PDF fixtures")

from workers.documents.pdf import parse_pdf  # noqa: E402
from workers.documents.pdf_layout import RUNNING_LINE_PAGES  # noqa: E402

_FILLER = "The reactor hall is inspected every morning by the shift lead before any work starts. "


def _parse(pdf: Any) -> ParsedDocument:
    return parse_pdf(bytes(pdf.output()), "manual.pdf")


def _paragraph(pdf: Any, text: str) -> None:
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")


def _heading(
    pdf: Any, title: str, *, level: int = 0, outline_at_page_top: bool = False, outline_title: str = ""
) -> None:
    """A heading drawn as text (``title``, with its label if any), with its outline entry
    (``outline_title``, else ``title``) where it is drawn or (as some typesetters place it) at the
    top of the page."""
    if outline_at_page_top:
        drawn_at = pdf.get_y()
        pdf.set_y(pdf.t_margin)
        pdf.start_section(outline_title or title, level=level)
        pdf.set_y(drawn_at)
    else:
        pdf.start_section(outline_title or title, level=level)
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")


def _section_of(parsed: ParsedDocument, words: str) -> tuple[str, ...]:
    return next(block.section for block in parsed.blocks if words in block.text)


@pytest.mark.parametrize("outline_at_page_top", [False, True])
def test_text_above_a_heading_halfway_down_a_page_keeps_the_section_before(outline_at_page_top: bool) -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    _heading(pdf, "Cooling")
    _paragraph(pdf, "Prime the coolant pump with water before it is started.")
    _heading(pdf, "Shutdown", outline_at_page_top=outline_at_page_top)
    _paragraph(pdf, "Lower the control rods slowly over ten minutes.")
    pdf.add_page()
    _paragraph(pdf, "After a shutdown the logbook is signed by two operators.")

    parsed = _parse(pdf)

    assert _section_of(parsed, "coolant pump") == ("Cooling",)
    assert _section_of(parsed, "control rods") == ("Shutdown",)
    assert _section_of(parsed, "logbook") == ("Shutdown",)  # carried onto the next page
    shutdown = next(block for block in parsed.blocks if "control rods" in block.text)
    assert shutdown.text.startswith("Shutdown") and "coolant" not in shutdown.text
    assert sum(block.text.count("Lower the control rods") for block in parsed.blocks) == 1


def test_a_heading_in_the_right_column_leaves_the_left_column_whole() -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    _heading(pdf, "Overview")
    top = pdf.get_y()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(90, 6, "Left column. " + _FILLER * 4 + "End of the left column.", new_x="LMARGIN", new_y="NEXT")
    pdf.set_xy(110, top)
    pdf.multi_cell(90, 6, "Right column opening. " + _FILLER, new_x="LEFT", new_y="NEXT")
    pdf.set_x(110)
    pdf.start_section("Cooling")
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(90, 8, "Cooling", new_x="LEFT", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(90, 6, "Prime the coolant pump with water before it is started.", new_x="LEFT", new_y="NEXT")

    parsed = _parse(pdf)

    left = next(block for block in parsed.blocks if "Left column" in block.text)
    assert left.section == ("Overview",) and "End of the left column" in left.text  # not cut at the heading's height
    assert _section_of(parsed, "Right column opening") == ("Overview",)
    assert _section_of(parsed, "coolant pump") == ("Cooling",)


def test_a_mention_of_a_title_in_the_text_is_not_its_heading() -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    _heading(pdf, "Operations")
    _paragraph(pdf, "Every operator reads the Shutdown steps before the first shift of the week.")
    _heading(pdf, "Shutdown", outline_at_page_top=True)
    _paragraph(pdf, "Lower the control rods slowly over ten minutes.")

    parsed = _parse(pdf)

    assert _section_of(parsed, "first shift") == ("Operations",)
    assert _section_of(parsed, "control rods") == ("Shutdown",)


def test_a_chapter_title_followed_at_once_by_its_first_section_is_no_block_of_its_own() -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    _heading(pdf, "Chapter 2: Operations", outline_title="Operations")
    _heading(pdf, "2.1 Startup", level=1, outline_title="Startup")
    _paragraph(pdf, "Check the interlocks before the first start of the day.")

    parsed = _parse(pdf)

    assert [block.section for block in parsed.blocks] == [("Operations", "Startup")]
    assert parsed.blocks[0].text.startswith("2.1 Startup")  # the heading keeps its number


class _Paged(fpdf.FPDF):  # type: ignore[misc, name-defined]
    def header(self) -> None:
        # The title at the left margin and the page number at the right, on one line with a wide gap.
        self.set_font("Helvetica", "I", 9)
        self.cell(0, 6, "Reactor operations manual, revision 4")
        self.set_x(self.l_margin)
        self.cell(0, 6, str(self.page_no()), align="R", new_x="LMARGIN", new_y="NEXT")

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "I", 9)
        self.cell(0, 6, f"Page {self.page_no()} of the manual")


def test_running_headers_and_footers_are_left_out_of_the_text() -> None:
    pdf = _Paged()
    for number in range(RUNNING_LINE_PAGES + 1):
        pdf.add_page()
        _paragraph(pdf, f"Checklist {number}: {_FILLER * 3}")

    parsed = _parse(pdf)

    assert "revision 4" not in parsed.text and "of the manual" not in parsed.text
    assert parsed.title == "Reactor operations manual, revision 4 1"  # no metadata title: the first line
    assert [block.page for block in parsed.blocks if block.text.startswith("Checklist")] == [1, 2, 3, 4]


def test_a_line_on_fewer_pages_than_a_running_line_needs_is_text() -> None:
    pdf = _Paged()
    for _ in range(RUNNING_LINE_PAGES - 1):
        pdf.add_page()
        _paragraph(pdf, _FILLER)

    assert "revision 4" in _parse(pdf).text


def test_without_an_outline_lines_set_larger_than_the_text_are_headings() -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    for size, title in ((18, "Reactor operations"), (14, "Cooling")):
        pdf.set_font("Helvetica", "B", size)
        pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    _paragraph(pdf, "Prime the coolant pump with water before it is started. " + _FILLER)
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "Shutdown", new_x="LMARGIN", new_y="NEXT")
    _paragraph(pdf, "Lower the control rods slowly over ten minutes. " + _FILLER)

    parsed = _parse(pdf)

    assert _section_of(parsed, "coolant pump") == ("Reactor operations", "Cooling")
    assert _section_of(parsed, "control rods") == ("Reactor operations", "Shutdown")


def test_a_word_hyphenated_at_a_line_end_is_read_whole() -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    _paragraph(pdf, "The alarm is sent in addi-\ntion to the pager message.")

    assert "in addition to the pager" in _parse(pdf).text


class _BrowserPrint(fpdf.FPDF):  # type: ignore[misc, name-defined]
    """A web page saved as PDF from a browser: the date, time and title above, the address and
    "page/pages" below (Chromium's print layout)."""

    def header(self) -> None:
        self.set_font("Helvetica", "", 8)
        self.cell(0, 6, "12/7/26, 10:15 AM")
        self.set_x(self.l_margin)
        self.cell(0, 6, "Deploy guide - Acme wiki", align="C", new_x="LMARGIN", new_y="NEXT")

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.cell(0, 6, "https://wiki.acme.example/deploy-guide")
        self.set_x(self.l_margin)
        self.cell(0, 6, f"{self.page_no()}/1", align="R")


def test_a_browsers_print_header_and_footer_are_left_out_of_a_one_page_print() -> None:
    pdf = _BrowserPrint()
    pdf.add_page()
    _paragraph(pdf, f"Every deploy goes to staging first. {_FILLER}")

    text = _parse(pdf).text

    assert "Every deploy goes to staging first." in text
    assert "10:15 AM" not in text and "wiki.acme.example" not in text
