"""The embedded store: one SQLite file (FTS5 + float32 vectors), searched through an in-memory index."""

from search.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
