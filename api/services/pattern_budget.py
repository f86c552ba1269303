"""Regular expressions from callers, compiled under a CPU and memory budget.

The ``regex`` engine unrolls counted repeats when it compiles: ``((a{1000}){1000}){1000}``, 23
characters, compiles to a billion nodes and took a server to 20 GB before the kernel killed it.
A match has a time budget (``finditer(timeout=…)``), a compile has none, and no compile-size
limit exists in either engine. So a pattern that could grow (one with a counted repeat) is first
compiled in a short-lived child process under ``RLIMIT_CPU`` and ``RLIMIT_AS``: a pattern over
either limit kills only the child, and the caller gets a ``ValidationError`` (422). Patterns that
passed are remembered, so a pattern asked for again costs nothing.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from typing import Any

from hivemem.errors import ValidationError

__all__ = ["compile_pattern"]

# The child's limits: CPU seconds (not wall time, so a busy machine does not refuse a fine pattern)
# and address space (the interpreter and the regex module take about 40 MB of it).
COMPILE_CPU_S = 2
COMPILE_MEMORY_BYTES = 512 * 1024 * 1024
# A child that neither finishes nor uses its CPU (it cannot start, say) is stopped after this long.
_WALL_BACKSTOP_S = 60.0
_CHECKED_KEPT = 1024

_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
import regex
try:
    regex.compile(sys.stdin.read(), int(sys.argv[1]))
except regex.error:
    sys.exit({invalid})
"""
# The child's exit status for a pattern the engine refuses: within budget; the parent's compile
# then names the error.
_INVALID = 3


def _may_grow(pattern: str) -> bool:
    """Whether compiling ``pattern`` can take more than time and memory linear in its length: only
    a counted repeat (``{m}``, ``{m,n}``) is unrolled; anything else compiles in a bounded way."""
    return "{" in pattern


@functools.lru_cache(maxsize=_CHECKED_KEPT)
def _within_budget(pattern: str, flags: int) -> bool:
    child = _CHILD.format(cpu=COMPILE_CPU_S, memory=COMPILE_MEMORY_BYTES, invalid=_INVALID)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", child, str(flags)],
            input=pattern,
            text=True,
            capture_output=True,
            timeout=_WALL_BACKSTOP_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    # Over the memory limit the child dies of MemoryError (1); over the CPU limit, of SIGXCPU.
    return done.returncode in (0, _INVALID)


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    """``pattern`` compiled by the ``regex`` engine. Raises ``ValidationError`` for an invalid pattern
    and for one whose compiled form would exceed the budget (``COMPILE_CPU_S`` of CPU,
    ``COMPILE_MEMORY_BYTES`` of memory)."""
    import regex

    if _may_grow(pattern) and not _within_budget(pattern, flags):
        raise ValidationError(
            f"pattern: too large once compiled (over {COMPILE_CPU_S} CPU seconds or "
            f"{COMPILE_MEMORY_BYTES // 2**20} MiB); nested counted repeats such as (a{{1000}}){{1000}} multiply",
            field="pattern",
        )
    try:
        return regex.compile(pattern, flags)
    except regex.error as exc:
        raise ValidationError(f"pattern: not a valid regular expression ({exc})", field="pattern") from exc
