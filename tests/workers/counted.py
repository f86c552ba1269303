"""Counting the calls of a module's function while it still does its work."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


def counted(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> list[tuple[Any, ...]]:
    """Wrap ``module.name`` for the test: the real function runs, and each call's arguments are
    appended to the list returned."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(module, name)

    def wrapper(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, wrapper)
    return calls
