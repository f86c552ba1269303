"""The words a BM25 query searches: one rule for every store, so their keyword legs agree.

Words are ``\\w+`` runs, casefolded and deduplicated in order. Lucene's English stop set is left
out: words that match nearly every memory only add noise to BM25, and min-max fusion would turn a
match on "the" alone into a full-weight leg score. A query of stopwords only still searches them.
"""

from __future__ import annotations

import re

__all__ = ["ENGLISH_STOPWORDS", "MAX_QUERY_TERMS", "query_terms"]

# The Lucene English stop set, word for word (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`).
# fmt: off
ENGLISH_STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
])
# fmt: on
MAX_QUERY_TERMS = 64
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> tuple[list[str], bool] | None:
    """The terms to search (at most ``MAX_QUERY_TERMS``) and whether they are stopwords only;
    None when ``text`` has no word at all."""
    words = list(dict.fromkeys(w.casefold() for w in _WORD.findall(text)))
    if not words:
        return None
    kept = [w for w in words if w not in ENGLISH_STOPWORDS]
    return (kept or words)[:MAX_QUERY_TERMS], not kept
