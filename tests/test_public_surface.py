"""What a client sees does not change unless it is meant to: the OpenAPI document, the MCP tools
and the CLI's commands are the copies kept in tests/surface/ (see tests/public_surface.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.public_surface import KEPT, SURFACES


@pytest.mark.parametrize("name", sorted(SURFACES))
def test_the_public_surface_is_the_one_kept(name: str) -> None:
    read: Callable[[], Any] = SURFACES[name]
    now = json.loads(json.dumps(read(), sort_keys=True))
    kept = json.loads((KEPT / name).read_text(encoding="utf-8"))
    assert now == kept, f"{name} changed; if that is meant: python -m tests.public_surface --write"
