"""Moments typed on the command line: RFC 3339 as the API takes it, or a plain date.

A person filtering by time types ``--after 2026-11-01`` more often than ``2026-11-01T00:00:00Z``;
a date alone is taken as the start of that day in UTC. Anything else goes to the API's own check,
which says what it accepts.
"""

from __future__ import annotations

import re

__all__ = ["MOMENT_HELP", "moment"]

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

MOMENT_HELP = "RFC 3339 (2026-12-01T09:30:00Z), or a date: the start of that day, UTC"


def moment(text: str) -> str:
    """``text`` as the API reads a moment: a plain date becomes midnight UTC of that day."""
    return f"{text}T00:00:00Z" if _DATE.fullmatch(text) else text
