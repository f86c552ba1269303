"""Tuning parameters changed for the length of a block, as an experiment changes them: through their
``HIVEMEM_*`` variables, which every group (:mod:`hivemem.tuning`) reads when it is built."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["tuned"]


def _variable(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(getattr(value, "value", value))


@contextmanager
def tuned(**values: object) -> Iterator[None]:
    """Set ``HIVEMEM_<NAME>`` for each of ``values`` inside the block, and put back what was there."""
    names = {f"HIVEMEM_{name.upper()}": _variable(value) for name, value in values.items()}
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, old in before.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
