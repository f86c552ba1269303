"""Patterns sent to ``knowledge match``: compiled under a budget, and kept in a cache bounded in
count and in bytes, never in the regex engine's own (500 patterns of any size)."""

from __future__ import annotations

import regex
import regex._main as regex_internals

from api.services.pattern_budget import COMPILED_MAX_BYTES, PatternCache, compile_pattern, pattern_cache


def test_the_cache_keeps_at_most_its_count_and_its_bytes_least_recently_used_leaving() -> None:
    cache = PatternCache(max_patterns=3, max_bytes=1000)
    for name in "abcd":
        cache.put(name, 0, object(), 100)
    assert cache.held() == (3, 300)
    assert cache.get("a", 0) is None and cache.get("b", 0) is not None
    cache.put("big", 0, object(), 900)  # "c" and "d" leave before "b", used just now
    assert cache.held() == (2, 1000) and cache.get("b", 0) is not None and cache.get("c", 0) is None


def test_compiled_patterns_stay_out_of_the_engines_own_cache_and_within_bounds() -> None:
    regex.purge()
    for i in range(pattern_cache.max_patterns + 20):
        compile_pattern(f"distinct{i}(?:ab|cd)+")
    for i in range(12):  # a few MB each once compiled: the byte bound, not the count, holds these
        compile_pattern(f"(?:(?:[a-f]x){{100}}y){{{300 + i}}}q")
    assert regex_internals._cache == {}
    count, held = pattern_cache.held()
    assert count <= pattern_cache.max_patterns and held <= pattern_cache.max_bytes
    assert compile_pattern("distinct3(?:ab|cd)+") is compile_pattern("distinct3(?:ab|cd)+")


def test_a_pattern_larger_than_the_kept_maximum_once_compiled_is_refused() -> None:
    import pytest

    from hivemem.errors import ValidationError

    # About 70 MB compiled: within the child's address space, over what the server keeps.
    with pytest.raises(ValidationError, match=f"{COMPILED_MAX_BYTES // 2**20} MiB"):
        compile_pattern("(?:(?:[a-f]x){100}y){2000}q")
