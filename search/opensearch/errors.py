"""The OpenSearch store's error boundary: every driver error becomes one typed class, here only.

Callers inside the package branch on these classes (a version conflict is a lost race to retry, a
missing document is None, an index that already exists was made by a concurrent setup), never on
an exception's text or on ``__cause__``. All of them are :class:`hivemem.errors.StoreError`, so
outside the package they read as the store errors the contract names.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hivemem.errors import StoreError, StoreUnavailableError

__all__ = ["AlreadyExists", "Conflict", "DocumentMissing", "IndexMissing", "error_type", "translate_errors"]


class Conflict(StoreError):
    """A version conflict (409): a create found the id taken, or a conditional write lost its race."""


class DocumentMissing(StoreError):
    """The document asked for is not there (404); its index is."""


class IndexMissing(StoreError):
    """The index or alias asked for is not there (404 ``index_not_found_exception``)."""


class AlreadyExists(StoreError):
    """An index or alias that a create named exists already (``resource_already_exists_exception``)."""


# Answers of a cluster that is up but cannot serve yet (see translate_errors).
_TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})


def _root_cause(exc: Any) -> dict[str, Any]:
    info = getattr(exc, "info", None)
    if isinstance(info, dict):
        error = info.get("error")
        if isinstance(error, dict):
            causes = error.get("root_cause") or [error]
            first = causes[0] if isinstance(causes, list) and causes else error
            if isinstance(first, dict):
                return first
    return {}


def error_type(exc: Any) -> str:
    """The error type OpenSearch names in a response (``index_not_found_exception``), or ""."""
    cause = _root_cause(exc)
    if cause:
        return str(cause.get("type", ""))
    # Some driver errors carry the type as their ``error`` string (a bare 404 of a GET).
    text = getattr(exc, "error", "")
    return text if isinstance(text, str) and text.endswith("_exception") else ""


def _reason(exc: Any) -> str:
    cause = _root_cause(exc)
    if cause:
        return f"{cause.get('type', 'error')}: {cause.get('reason', '')}"
    return str(getattr(exc, "error", None) or exc)


@contextmanager
def translate_errors(display: str, action: str) -> Iterator[None]:
    """Turn ``opensearchpy`` errors raised while doing ``action`` on the cluster ``display`` into typed ones."""
    from opensearchpy import exceptions as os_errors

    try:
        yield
    except os_errors.ConnectionError as exc:
        raise StoreUnavailableError(
            f"cannot reach OpenSearch at {display} ({action}): {type(exc).__name__}: {exc.error}"
        ) from exc
    except (os_errors.AuthenticationException, os_errors.AuthorizationException) as exc:
        raise StoreUnavailableError(
            f"OpenSearch at {display} refused the credentials ({action}): {_reason(exc)}"
        ) from exc
    except os_errors.TransportError as exc:
        message = f"OpenSearch {action} failed ({exc.status_code}): {_reason(exc)}"
        kind = error_type(exc)
        if exc.status_code == 409:
            raise Conflict(message) from exc
        if kind == "resource_already_exists_exception":
            raise AlreadyExists(message) from exc
        if exc.status_code == 404:
            raise (IndexMissing if kind == "index_not_found_exception" else DocumentMissing)(message) from exc
        if exc.status_code in _TRANSIENT_STATUSES:
            # A node restarting (shards not yet assigned: 503), a full disk's write block or a full
            # queue (429): the cluster answers but cannot serve yet. A retry later succeeds, so the
            # caller gets the outage class (503 with Retry-After, a job retried with backoff), not a
            # failure that no retry would fix.
            raise StoreUnavailableError(message) from exc
        raise StoreError(message) from exc
