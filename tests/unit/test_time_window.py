"""Dates named by questions and written in memories (hivemem/time_window.py)."""

from __future__ import annotations

from datetime import date

import pytest

from hivemem.time_window import DatePattern, dates_in, question_date


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("What painting did Melanie show on October 13, 2023?", DatePattern(2023, 10, 13)),
        ("What did Gina find for her store on 1 February, 2023?", DatePattern(2023, 2, 1)),
        ("Who came to dinner on the 3rd of May 2023?", DatePattern(2023, 5, 3)),
        ("What setback did Melanie face in October 2023?", DatePattern(2023, 10)),
        ("What happened in Sept. 2022?", DatePattern(2022, 9)),
        ("When did Melanie go camping in June?", DatePattern(month=6)),
        ("How often did she swim in 2023?", DatePattern(year=2023)),
        ("What may the deploy break?", None),
        ("Which port does service 7 use?", None),
        ("Was the release on February 30, 2023?", None),
    ],
)
def test_the_date_a_question_names(question: str, named: DatePattern | None) -> None:
    assert question_date(question) == named


def test_dates_written_in_a_memory_in_order() -> None:
    text = "[1:56 pm on 8 May, 2023] Caroline: the launch moved from June 2, 2023 to 30 June 2023."
    assert dates_in(text) == [date(2023, 5, 8), date(2023, 6, 2), date(2023, 6, 30)]
    assert dates_in("Deploys go out on Tuesdays.") == []


def test_a_pattern_fits_the_parts_it_fixes() -> None:
    june = DatePattern(month=6)
    assert june.fits(date(2021, 6, 1)) and not june.fits(date(2021, 7, 1))
    assert DatePattern(2023, 5, 8).fits_any([date(2022, 1, 1), date(2023, 5, 8)])
    assert not DatePattern(year=2023).fits_any([])
