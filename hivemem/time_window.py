"""Dates in questions and in memories, for the recall stage that favours what a question's date names.

"What did Maria donate in December 2023?", "What did Gina find on 1 February, 2023?", "When did
Melanie go camping in June?": the date a question names is a pattern (a day, a month of a year, a
month of any year, a year) that a memory's date either fits or not. A memory's dates are the ones
written in its text (a conversation turn logged with its session's date, a note that says when
something happened), else the day it was created.

Only absolute dates are read. Relative ones ("last week", "yesterday") would need the moment the
question refers to, which a stored conversation does not share with the moment it is asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

__all__ = ["DatePattern", "dates_in", "question_date"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# Longest names first, so that "sept" is not read as "sep" and a stray "t".
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)
# A month alone only after a word that makes it a time ("may" is also a verb).
_MONTH_ALONE = re.compile(rf"\b(?:in|during|since|until|early|mid|late|last|this|of)\s+{_MONTH}\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b(?:in|during|since|until|of)\s+{_YEAR}\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class DatePattern:
    """A date with parts left open: ``year`` and ``month`` and ``day`` each fixed or None (any)."""

    year: int | None = None
    month: int | None = None
    day: int | None = None

    def fits(self, when: date) -> bool:
        """Whether ``when`` has every part this pattern fixes."""
        return (
            (self.year is None or when.year == self.year)
            and (self.month is None or when.month == self.month)
            and (self.day is None or when.day == self.day)
        )

    def fits_any(self, dates: Iterable[date]) -> bool:
        """Whether one of ``dates`` fits."""
        return any(self.fits(when) for when in dates)


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def dates_in(text: str) -> list[date]:
    """The full dates (day, month and year) written in ``text``, in order of appearance."""
    found: list[tuple[int, date]] = []
    for match in _DAY_MONTH_YEAR.finditer(text):
        day, month, year = match.groups()
        when = _valid(int(year), _MONTHS[month.lower()], int(day))
        if when is not None:
            found.append((match.start(), when))
    for match in _MONTH_DAY_YEAR.finditer(text):
        month, day, year = match.groups()
        when = _valid(int(year), _MONTHS[month.lower()], int(day))
        if when is not None:
            found.append((match.start(), when))
    return [when for _, when in sorted(found)]


def question_date(question: str) -> DatePattern | None:
    """The date a question names, as precisely as it names it; None when it names none."""
    if dates := dates_in(question):
        first = dates[0]
        return DatePattern(first.year, first.month, first.day)
    if match := _MONTH_YEAR.search(question):
        month, year = match.groups()
        return DatePattern(int(year), _MONTHS[month.lower()])
    if match := _MONTH_ALONE.search(question):
        return DatePattern(month=_MONTHS[match.group(1).lower()])
    if match := _YEAR_ALONE.search(question):
        return DatePattern(year=int(match.group(1)))
    return None
