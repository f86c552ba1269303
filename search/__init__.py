"""Storage backends behind one contract (:class:`search.base.Store`), chosen by URL here only."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from hivemem.errors import ConfigError
from search.base import DEFAULT_STATES, SearchFilter, Store

__all__ = ["DEFAULT_STATES", "SUPPORTED_SCHEMES", "SearchFilter", "Store", "open_store", "sqlite_path"]

SUPPORTED_SCHEMES = ("sqlite",)


def sqlite_path(url: str) -> str:
    """The file path of a SQLite URL, read as SQLAlchemy does: ``sqlite:///relative.db``,
    ``sqlite:////absolute/path.db``; ``sqlite://:memory:`` is an in-memory store."""
    if url in ("sqlite://:memory:", "sqlite:///:memory:"):
        return ":memory:"
    parts = urlsplit(url)
    if parts.netloc or not parts.path:
        raise ConfigError(f"SQLite URL must be sqlite:///PATH or sqlite://:memory:, got {url!r}")
    return unquote(parts.path[1:])


def open_store(url: str, *, embedding_model: str, dimension: int) -> Store:
    """Open the store a URL names. The only place in hivemem that picks a backend.

    ``sqlite:///PATH`` or ``sqlite://:memory:`` gives a :class:`search.sqlite.SQLiteStore`.
    The store records ``embedding_model`` and ``dimension`` on first open and refuses a mismatch.
    Raises ``ConfigError`` for any other scheme.
    """
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        from search.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url), embedding_model=embedding_model, dimension=dimension)
    raise ConfigError(f"unsupported store URL {url!r}: accepted schemes are {', '.join(SUPPORTED_SCHEMES)}")
