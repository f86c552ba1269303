"""SQL text the SQLite store's modules share: placeholders for IN clauses and the FTS5 query of a text."""

from __future__ import annotations

from collections.abc import Sequence

from search.query_terms import query_terms

__all__ = ["IN_CHUNK", "fts_query", "marks"]

# Values per IN list (rescoring, relations): well under SQLite's limit on bound variables.
IN_CHUNK = 2_000


def marks(values: Sequence[object]) -> str:
    """``?, ?, ?`` for an IN clause (or a VALUES list) over ``values``."""
    return ", ".join("?" * len(values))


def fts_query(text: str) -> str | None:
    """An FTS5 query that ORs the query terms of ``text``, each quoted so no word is read as syntax."""
    terms = query_terms(text)
    return None if terms is None else " OR ".join(f'"{w}"' for w in terms[0])
