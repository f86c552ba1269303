"""Where a document's bytes come from: a local file (checked against what the caller may read) or a URL.

A source is a file path, an http(s) URL, ``key:NAME`` (text stored with ``store``) or
``upload:NAME`` (a document uploaded over HTTP); the last two live only in the store.
Who may name a file is the caller's :class:`FileAccess`: over stdio and the CLI the agent reads
its own files; over HTTP only files inside ``HIVEMEM_KNOWLEDGE_ALLOWED_PATHS`` (empty: none), so a
team server reads no file its operator did not offer. A directory, or anything else that is not
a regular file (a named pipe, a socket, a device), is refused as a source.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from hivemem.config import Settings
from hivemem.errors import DocumentAccessDenied, DocumentError, DocumentNotFoundError
from hivemem.knowledge import Document
from workers.documents.checkouts import checkout_file, is_checkout_name
from workers.documents.fetch import FetchLimits, fetch_url
from workers.documents.knowledge_tuning import KnowledgeTuning

__all__ = ["KEY_PREFIX", "STORED_PREFIXES", "FileAccess", "fetch_limits", "is_url", "key_uri", "read_source"]

KEY_PREFIX = "key:"
# Sources that live only in the store: text stored under a key, and uploaded documents.
STORED_PREFIXES = (KEY_PREFIX, "upload:")
_NOT_REGULAR = "not a regular file (a named pipe, socket or device): name a document file"


def is_url(source: str) -> bool:
    """Whether a source names a URL (any scheme: only http and https are then accepted)."""
    head = source.split(":", 1)[0].lower()
    return "://" in source and head.isalpha() and len(head) > 1


def key_uri(key: str) -> str:
    """The uri of text stored under ``key``."""
    return f"{KEY_PREFIX}{key}"


@dataclass(frozen=True, slots=True)
class FileAccess:
    """Which local files a caller may name: any (``allowed`` None: stdio, CLI) or those under ``allowed``;
    and the caller's ``project`` folder, whose checkout the files named ``repo:PATH`` are found in
    (:mod:`workers.documents.checkouts`; None over HTTP: a server cannot see the client's folder)."""

    allowed: tuple[Path, ...] | None = None
    project: Path | None = None

    @classmethod
    def over_http(cls, settings: Settings) -> FileAccess:
        """The files an HTTP client may name: those under the configured folders."""
        return cls(tuple(Path(p).expanduser().resolve() for p in settings.knowledge_allowed_paths))

    def located(self, source: str, scope: str) -> str:
        """``source`` as a path or URL to read: a ``repo:PATH`` name of ``scope`` becomes the file's
        path in this machine's checkout of it (raises ``DocumentError`` when none is known)."""
        if not is_checkout_name(source):
            return source
        return str(checkout_file(source, scope, self.project))

    def resolve(self, source: str) -> Path:
        """The real path of a file source, checked. Raises ``DocumentError``."""
        if not _is_utf8(source):
            # A name of bytes that are not UTF-8 (read from the file system) cannot be a source's
            # uri; it is shown with those bytes replaced, so that the error itself can be printed.
            shown = source.encode("utf-8", "replace").decode("utf-8")
            raise DocumentError("the path is not valid UTF-8: rename the file to index it", source=shown)
        try:
            return self._resolve(source)
        except (OSError, RuntimeError) as exc:
            # A name the file system refuses (a component over 255 bytes), or ~user of no user.
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise DocumentError(f"cannot read this path: {reason}", source=source) from exc

    def _resolve(self, source: str) -> Path:
        path = Path(source).expanduser()
        if self.allowed is not None and not path.is_absolute():
            raise DocumentAccessDenied("refused: name files by absolute path on this server", source=source)
        real = path.resolve()
        if self.allowed is not None and not any(real.is_relative_to(folder) for folder in self.allowed):
            hint = (
                "this server reads no local files over HTTP (HIVEMEM_KNOWLEDGE_ALLOWED_PATHS is empty); upload "
                "the document or store its text instead"
                if not self.allowed
                else "it is outside the folders this server reads (HIVEMEM_KNOWLEDGE_ALLOWED_PATHS)"
            )
            raise DocumentAccessDenied(f"refused: {hint}", source=source)
        if real.is_dir():
            raise DocumentError(
                "is a directory: name one file, or index a folder with `hivemem knowledge ingest`", source=source
            )
        if not real.exists():
            raise DocumentNotFoundError("no such file", source=source)
        if not real.is_file():
            # Opening a named pipe waits for a writer that may never come: refused before any read.
            raise DocumentError(_NOT_REGULAR, source=source)
        return real


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fetch_limits(settings: Settings) -> FetchLimits:
    """The URL fetch limits as configured."""
    return FetchLimits(
        max_bytes=settings.knowledge_max_document_bytes,
        timeout_s=KnowledgeTuning().knowledge_url_timeout_s,
        allow_private=settings.knowledge_allow_private_urls,
    )


def read_file(source: str, access: FileAccess, settings: Settings) -> Document:
    """A local file's bytes, after the access check and the size limit (read from its size first)."""
    path = access.resolve(source)
    try:
        # Not blocking, and checked on the open file: a pipe put in the file's place after the check
        # above neither hangs the read nor is read as a document.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise DocumentError(f"cannot read the file ({exc.strerror})", source=str(path)) from exc
    with os.fdopen(descriptor, "rb") as handle:
        facts = os.fstat(handle.fileno())
        if not stat.S_ISREG(facts.st_mode):
            raise DocumentError(_NOT_REGULAR, source=str(path))
        if facts.st_size > settings.knowledge_max_document_bytes:
            raise DocumentError(
                f"refused: {facts.st_size:,} bytes is over the {settings.knowledge_max_document_bytes:,}-byte limit",
                source=str(path),
            )
        try:
            data = handle.read()
        except OSError as exc:
            raise DocumentError(f"cannot read the file ({exc.strerror})", source=str(path)) from exc
    return Document(uri=str(path), name=path.name, data=data)


def read_source(source: str, access: FileAccess, settings: Settings) -> Document:
    """The document a file path or URL names. Raises ``DocumentError`` (and its 404/403 kinds)."""
    if is_url(source):
        return fetch_url(source, fetch_limits(settings))
    return read_file(source, access, settings)
