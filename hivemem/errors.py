"""The one exception tree of hivemem.

    HivememError
    ├── ConfigError              a setting or URL is invalid
    ├── ValidationError          caller input is invalid (nothing was written)
    │   ├── SecretRefused            a write's text holds a credential and the policy refuses it
    │   └── DocumentError            a document cannot be indexed (corrupt, encrypted, unsupported, …)
    │       ├── DocumentNotFoundError    no such file (or URL answered 404)
    │       └── DocumentAccessDenied     the server may not read that file for this caller
    ├── SecretScanBudgetError    the check of a write for credentials ran out of its CPU budget (503)
    ├── ConfirmationRequired     a destructive call came without confirm=true
    ├── PreviewChangedError      a bulk forget's set is no longer the one its preview showed
    ├── UndoRefused              the audit record cannot be undone, or was undone already
    ├── NotAGoalError            a goal's operation asked of a memory of another type
    ├── AuthenticationError      no token, or not a live one (HTTP 401)
    │   └── TooManyAttempts          too many failed tokens from one address, or calls of one token (429)
    ├── PermissionDeniedError    the caller's grants do not allow this (HTTP 403)
    ├── EmbeddingError           the embedder could not load or encode
    ├── JobError                 a background job failed
    │   ├── JobNotFoundError         no job with that id (or it has expired)
    │   └── BrokerUnavailableError   the job broker cannot be reached
    ├── RerankUnavailableError   the reranker failed or its pool cannot be reached (first-stage order)
    │   └── RerankLateError          the rerank pool did not answer within its deadline
    └── StoreError               the store could not do what was asked
        ├── MemoryNotFoundError      no memory with that id (in the caller's scopes)
        ├── AuditNotFoundError       no audit record with that id (in the caller's scopes)
        ├── SourceNotFoundError      no indexed document with that uri or key (in the caller's scopes)
        ├── TokenNotFoundError       no token with that id
        ├── DuplicateMemoryError     the id exists and the policy is FAIL
        ├── EmbeddingMismatchError   the store was built with another model or dimension
        └── StoreUnavailableError    the store cannot be reached or is locked
            └── StoreCorruptError        the store's data is damaged (refused until repaired)

Backends translate their driver errors at their boundary (``raise … from exc``);
``api/errors.py`` maps each class to one HTTP status and one MCP tool error.
"""

from __future__ import annotations

__all__ = [
    "AuditNotFoundError",
    "AuthenticationError",
    "BrokerUnavailableError",
    "ConfigError",
    "ConfirmationRequired",
    "DocumentAccessDenied",
    "DocumentError",
    "DocumentNotFoundError",
    "DuplicateMemoryError",
    "EmbeddingError",
    "EmbeddingMismatchError",
    "HivememError",
    "JobError",
    "JobNotFoundError",
    "MemoryNotFoundError",
    "NotAGoalError",
    "PermissionDeniedError",
    "PreviewChangedError",
    "RerankLateError",
    "RerankUnavailableError",
    "SecretRefused",
    "SecretScanBudgetError",
    "SourceNotFoundError",
    "StoreCorruptError",
    "StoreError",
    "StoreUnavailableError",
    "TokenNotFoundError",
    "TooManyAttempts",
    "UndoRefused",
    "ValidationError",
]


class HivememError(Exception):
    """Base class of every error hivemem raises on purpose."""


class ConfigError(HivememError):
    """A setting, a config file or a store/broker URL is invalid."""


class ValidationError(HivememError):
    """Caller input is invalid; ``field`` names the offending field. Nothing was written."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class SecretRefused(ValidationError):
    """A write held a credential (``kind``, in ``field``) and the policy refuses it. The message names
    the kind, the field and where in it, never the value. Nothing was written."""

    def __init__(self, message: str, *, field: str, kind: str) -> None:
        super().__init__(message, field=field)
        self.kind = kind


class SecretScanBudgetError(HivememError):
    """Checking a write's text for credentials took more than its CPU budget: the write is not
    stored, since what was not checked may hold a key (HTTP 503; smaller parts pass)."""


class DocumentError(ValidationError):
    """A document cannot be indexed; the message says why (and what would fix it, where something can).

    ``source`` names the file or URL. Nothing of that document was written.
    """

    def __init__(self, message: str, *, source: str = "") -> None:
        super().__init__(f"{source}: {message}" if source else message, field="source")
        self.source = source
        self.reason = message


class DocumentNotFoundError(DocumentError):
    """The file a source names does not exist."""


class DocumentAccessDenied(DocumentError):
    """The file is outside what this server reads for the caller (over HTTP: the allowed folders)."""


class ConfirmationRequired(HivememError):
    """A destructive operation (forget) was called without ``confirm=true``."""


class PreviewChangedError(HivememError):
    """A confirmed bulk forget matched another set than its preview did. Nothing was deleted."""


class UndoRefused(HivememError):
    """The audit record names something that cannot be undone (``api.services.undo.UNDOABLE``), or
    was undone already."""


class NotAGoalError(HivememError):
    """A goal's operation (consolidate) was asked of a memory of another type."""


class AuthenticationError(HivememError):
    """The request carries no token, or one that is unknown, revoked or expired."""


class TooManyAttempts(AuthenticationError):
    """Too many requests: failed tokens from one address, or calls of one token past its rate limit."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PermissionDeniedError(HivememError):
    """The caller is known, but its grants do not allow this call in this scope."""


class EmbeddingError(HivememError):
    """The embedding model could not be loaded or failed to encode."""


class JobError(HivememError):
    """A background job failed; the message carries the job's error."""


class JobNotFoundError(JobError):
    """No job with that id: never created, or expired after the job retention time."""


class BrokerUnavailableError(JobError):
    """The job broker (Redis) cannot be reached, so no job could be queued or read."""


class RerankUnavailableError(HivememError):
    """The reranker failed or its pool cannot be reached; recall answers in first-stage order."""


class RerankLateError(RerankUnavailableError):
    """The rerank pool did not answer within its deadline; recall answers in first-stage order."""


class StoreError(HivememError):
    """The store could not carry out the operation."""


class MemoryNotFoundError(StoreError):
    """No memory with that id exists (or it is outside the caller's scopes)."""


class AuditNotFoundError(StoreError):
    """No audit record with that id exists (or it is outside the caller's scopes)."""


class SourceNotFoundError(StoreError):
    """No indexed document with that uri or key exists in the caller's scopes."""


class TokenNotFoundError(StoreError):
    """No token with that id."""


class DuplicateMemoryError(StoreError):
    """A memory with that id already exists and the write policy is FAIL."""


class EmbeddingMismatchError(StoreError):
    """The store was built with another embedding model or dimension than the one configured."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached, or is locked by another writer for too long."""


class StoreCorruptError(StoreUnavailableError):
    """The store's data is damaged (a malformed database file); it serves no writes until repaired."""
