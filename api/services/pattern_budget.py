"""Regular expressions from callers, compiled under a CPU and memory budget, and kept in a cache
bounded in count and in bytes.

The ``regex`` engine unrolls counted repeats when it compiles: ``((a{1000}){1000}){1000}``, 23
characters, compiles to a billion nodes and took a server to 20 GB before the kernel killed it.
A match has a time budget (``finditer(timeout=…)``), a compile has none, and no compile-size
limit exists in either engine. So a pattern that could grow (one with a counted repeat) is first
compiled in a short-lived child process under ``RLIMIT_CPU`` and ``RLIMIT_AS``, which reports
how much memory the compile took: a pattern over either limit kills only the child, one whose
compiled form is larger than ``COMPILED_MAX_BYTES`` is refused too, and the caller gets a
``ValidationError`` (422).

The engine's own cache keeps the last 500 patterns compiled, whatever their size: distinct
patterns sent through ``match`` took a server's memory to 2.4 GB, and kept it. So nothing here
goes into that cache; the patterns compiled are kept in :class:`PatternCache`, at most
``CACHE_MAX_PATTERNS`` of them and ``CACHE_MAX_BYTES`` in all, the least recently used leaving first.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
from collections import OrderedDict
from typing import Any

from hivemem.errors import ValidationError

__all__ = ["PatternCache", "compile_pattern", "pattern_cache"]

# The child's limits: CPU seconds (not wall time, so a busy machine does not refuse a fine pattern)
# and address space (the interpreter and the regex module take about 40 MB of it).
COMPILE_CPU_S = 2
COMPILE_MEMORY_BYTES = 512 * 1024 * 1024
# The largest compiled pattern kept in the server: a search of the team's documents needs no more
# (a 500-character pattern of plain counted repeats compiles to a few MB).
COMPILED_MAX_BYTES = 32 * 1024 * 1024
CACHE_MAX_PATTERNS = 256
CACHE_MAX_BYTES = 64 * 1024 * 1024
# A pattern without counted repeats compiles to a few nodes a character: its size, estimated.
_BYTES_PER_CHARACTER = 256
_BYTES_PER_PATTERN = 16 * 1024
# A child that neither finishes nor uses its CPU (it cannot start, say) is stopped after this long.
_WALL_BACKSTOP_S = 60.0
_CHECKED_KEPT = 1024

_CHILD = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
import regex

def resident():
    # The pages held now (Linux); elsewhere the peak, in KiB (on macOS, bytes). Not the peak on
    # Linux: a child starts with its parent's peak, which a compile may never pass.
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024

before = resident()
try:
    compiled = regex.compile(sys.stdin.read(), int(sys.argv[1]), cache_pattern=False)
except regex.error:
    sys.exit({invalid})
print(resident() - before)
"""
# The child's exit status for a pattern the engine refuses: within budget; the parent's compile
# then names the error.
_INVALID = 3


def _may_grow(pattern: str) -> bool:
    """Whether compiling ``pattern`` can take more than time and memory linear in its length: only
    a counted repeat (``{m}``, ``{m,n}``) is unrolled; anything else compiles in a bounded way."""
    return "{" in pattern


@functools.lru_cache(maxsize=_CHECKED_KEPT)
def _compiled_bytes(pattern: str, flags: int) -> int | None:
    """The memory compiling ``pattern`` takes, measured in a child; None past the child's limits.
    An invalid pattern measures 0: the parent's compile names its error."""
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
        return None
    # Over the memory limit the child dies of MemoryError (1); over the CPU limit, of SIGXCPU.
    if done.returncode == _INVALID:
        return 0
    if done.returncode != 0:
        return None
    return int(done.stdout.strip() or 0)


def _estimated_bytes(pattern: str) -> int:
    return _BYTES_PER_PATTERN + _BYTES_PER_CHARACTER * len(pattern)


class PatternCache:
    """Compiled patterns by (pattern, flags), at most ``max_patterns`` and ``max_bytes`` (each
    pattern weighed by what compiling it took), the least recently used leaving first. Safe to
    share between threads."""

    def __init__(self, max_patterns: int = CACHE_MAX_PATTERNS, max_bytes: int = CACHE_MAX_BYTES) -> None:
        self.max_patterns = max_patterns
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[str, int], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, pattern: str, flags: int) -> Any | None:
        with self._lock:
            found = self._kept.get((pattern, flags))
            if found is None:
                return None
            self._kept.move_to_end((pattern, flags))
            return found[0]

    def put(self, pattern: str, flags: int, compiled: Any, weight: int) -> None:
        with self._lock:
            if (pattern, flags) in self._kept:
                return
            self._kept[(pattern, flags)] = (compiled, weight)
            self._bytes += weight
            while self._kept and (len(self._kept) > self.max_patterns or self._bytes > self.max_bytes):
                _, (_, leaving) = self._kept.popitem(last=False)
                self._bytes -= leaving

    def held(self) -> tuple[int, int]:
        """How many patterns are kept, and their weight in bytes."""
        with self._lock:
            return len(self._kept), self._bytes


pattern_cache = PatternCache()
"""The process's compiled patterns (``knowledge match``)."""


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    """``pattern`` compiled by the ``regex`` engine, from :data:`pattern_cache` when it holds it.
    Raises ``ValidationError`` for an invalid pattern and for one whose compiled form would exceed
    the budget (``COMPILE_CPU_S`` of CPU, ``COMPILED_MAX_BYTES`` of memory)."""
    import regex

    cached = pattern_cache.get(pattern, flags)
    if cached is not None:
        return cached
    weight = _estimated_bytes(pattern)
    if _may_grow(pattern):
        measured = _compiled_bytes(pattern, flags)
        if measured is None or measured > COMPILED_MAX_BYTES:
            raise ValidationError(
                f"pattern: too large once compiled (over {COMPILE_CPU_S} CPU seconds or "
                f"{COMPILED_MAX_BYTES // 2**20} MiB); nested counted repeats such as (a{{1000}}){{1000}} multiply",
                field="pattern",
            )
        weight = max(weight, measured)
    try:
        compiled = regex.compile(pattern, flags, cache_pattern=False)
    except regex.error as exc:
        raise ValidationError(f"pattern: not a valid regular expression ({exc})", field="pattern") from exc
    pattern_cache.put(pattern, flags, compiled, weight)
    return compiled
