"""A listing's cursor is a position, of a shape the schema states: every such string is accepted."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from hivemem.errors import ValidationError
from hivemem.listing_schemas import CURSOR_PATTERN, decode_cursor, encode_cursor


def test_a_cursor_names_the_exact_position_it_was_made_from() -> None:
    at = datetime(2026, 12, 4, 18, 41, 7, 123456, tzinfo=UTC)
    cursor = encode_cursor(at, "3f2a6c1e-0b7d-4c55-9e2f-8d1a2b3c4d5e")
    assert re.fullmatch(CURSOR_PATTERN, cursor)
    assert decode_cursor(cursor) == (at, "3f2a6c1e-0b7d-4c55-9e2f-8d1a2b3c4d5e")


@pytest.mark.parametrize("cursor", ["0.0", "99999999999999999.z", "1.a_b-C"])
def test_any_string_of_the_schemas_shape_is_a_position(cursor: str) -> None:
    created_at, memory_id = decode_cursor(cursor)
    assert created_at.tzinfo is UTC and memory_id == cursor.split(".", 1)[1]


@pytest.mark.parametrize("cursor", ["0", "", "not-a-cursor", "1.", ".x", "123456789012345678.x", "1.a/b"])
def test_anything_else_is_refused(cursor: str) -> None:
    assert not re.fullmatch(CURSOR_PATTERN, cursor)
    with pytest.raises(ValidationError, match="not a cursor"):
        decode_cursor(cursor)
