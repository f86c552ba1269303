"""Storage backends behind one contract (:class:`search.base.Store`), chosen by URL here only."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from hivemem.errors import ConfigError
from search.base import DEFAULT_STATES, SearchFilter, Store

__all__ = [
    "DEFAULT_STATES",
    "SUPPORTED_SCHEMES",
    "SearchFilter",
    "Store",
    "open_store",
    "recorded_embedding",
    "sqlite_path",
]

if TYPE_CHECKING:
    from hivemem.config import Settings
    from search.sqlite.tuning import SQLiteTuning

SUPPORTED_SCHEMES = ("sqlite", "opensearch+http", "opensearch+https")


def sqlite_path(url: str) -> str:
    """The file path of a SQLite URL, read as SQLAlchemy does: ``sqlite:///relative.db``,
    ``sqlite:////absolute/path.db``; ``sqlite://:memory:`` is an in-memory store."""
    if url in ("sqlite://:memory:", "sqlite:///:memory:"):
        return ":memory:"
    parts = urlsplit(url)
    if parts.netloc or not parts.path:
        raise ConfigError(f"SQLite URL must be sqlite:///PATH or sqlite://:memory:, got {url!r}")
    return unquote(parts.path[1:])


def open_store(
    url: str,
    *,
    embedding_model: str,
    dimension: int,
    settings: Settings | None = None,
    sqlite_tuning: SQLiteTuning | None = None,
) -> Store:
    """Open the store a URL names. The only place in hivemem that picks a backend.

    ``sqlite:///PATH`` or ``sqlite://:memory:`` gives a :class:`search.sqlite.SQLiteStore`;
    ``opensearch+http://HOST:PORT`` or ``opensearch+https://USER:PASS@HOST:PORT`` (optional
    ``?index=PREFIX``) gives a :class:`search.opensearch.OpenSearchStore`, configured by the
    ``opensearch_*`` fields of ``settings`` (None: the defaults); ``sqlite_tuning`` None: as configured.
    The store records ``embedding_model`` and ``dimension`` on first open and refuses a mismatch.
    Raises ``ConfigError`` for any other scheme.
    """
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        from search.sqlite import SQLiteStore
        from search.sqlite.tuning import SQLiteTuning

        tuning = sqlite_tuning or SQLiteTuning()
        return SQLiteStore(
            sqlite_path(url),
            embedding_model=embedding_model,
            dimension=dimension,
            integrity_check=tuning.sqlite_integrity_check == "quick",
            tuning=tuning,
        )
    if scheme in ("opensearch+http", "opensearch+https"):
        from search.opensearch import OpenSearchStore

        return OpenSearchStore(url, embedding_model=embedding_model, dimension=dimension, settings=settings)
    raise ConfigError(f"unsupported store URL {url!r}: accepted schemes are {', '.join(SUPPORTED_SCHEMES)}")


def recorded_embedding(url: str, settings: Settings | None = None) -> tuple[str, int] | None:
    """The embedding model and dimension a store was built with, read without opening it; None
    when it cannot be told (no store there yet, or it cannot be reached)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("opensearch+http", "opensearch+https"):
        from search.opensearch.setup import recorded_model

        return recorded_model(url, settings)
    if scheme != "sqlite":
        return None
    import sqlite3

    path = sqlite_path(url)
    if path == ":memory:":
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embedding_model', 'dimension')"))
    except sqlite3.Error:
        return None
    if "embedding_model" not in rows or "dimension" not in rows:
        return None
    return str(rows["embedding_model"]), int(rows["dimension"])
