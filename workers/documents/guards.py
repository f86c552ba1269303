"""Checks that run before any parser sees a document: size, format by content, zip bombs.

A parser is a large body of code that trusts its input more than it should: python-docx spent
9.7 s and 2 GB on a 1 GiB ``document.xml`` before failing. So the bytes are judged first, in
milliseconds: the extension must be one hivemem reads, the content must be what the extension
claims (a binary named ``.txt`` is refused), and a zip container's central directory must declare
sizes, a compression ratio and an entry count within limits before anything is inflated.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

from hivemem.errors import DocumentError
from hivemem.knowledge import DocumentFormat

__all__ = ["EXTENSIONS", "GuardLimits", "check_document", "format_of"]

EXTENSIONS: dict[str, DocumentFormat] = {
    ".pdf": DocumentFormat.PDF,
    ".docx": DocumentFormat.DOCX,
    ".html": DocumentFormat.HTML,
    ".htm": DocumentFormat.HTML,
    ".xhtml": DocumentFormat.HTML,
    ".md": DocumentFormat.MARKDOWN,
    ".markdown": DocumentFormat.MARKDOWN,
    ".txt": DocumentFormat.TEXT,
    ".text": DocumentFormat.TEXT,
    ".rst": DocumentFormat.TEXT,
    ".csv": DocumentFormat.TEXT,
    ".log": DocumentFormat.TEXT,
}

_TEXT_FORMATS = (DocumentFormat.HTML, DocumentFormat.MARKDOWN, DocumentFormat.TEXT)
_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """How much a document may hold: its bytes, and (zip containers) what its entries inflate to."""

    max_bytes: int = 50 * 1024 * 1024
    max_inflated_bytes: int = 200 * 1024 * 1024
    max_ratio: float = 100.0
    max_entries: int = 10_000


def format_of(name: str, content_type: str | None = None) -> DocumentFormat:
    """The format a file name (or, for a URL, its content type) names. Raises ``DocumentError``."""
    if content_type:
        kind = content_type.split(";", 1)[0].strip().lower()
        by_type = {
            "application/pdf": DocumentFormat.PDF,
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DocumentFormat.DOCX,
            "text/html": DocumentFormat.HTML,
            "application/xhtml+xml": DocumentFormat.HTML,
            "text/markdown": DocumentFormat.MARKDOWN,
            "text/plain": DocumentFormat.TEXT,
        }
        if kind in by_type:
            return by_type[kind]
    suffix = PurePath(name).suffix.lower()
    found = EXTENSIONS.get(suffix)
    if found is None:
        known = ", ".join(sorted(EXTENSIONS))
        raise DocumentError(f"unsupported format {suffix or '(no extension)'!r}; hivemem reads {known}", source=name)
    return found


# The first bytes of common binary formats: a PDF or an image renamed .txt is not text.
_BINARY_MAGIC = (
    b"%PDF-",
    b"PK\x03\x04",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"\x7fELF",
    b"\x1f\x8b",
    b"BZh",
    b"7z\xbc\xaf",
)


def _looks_binary(head: bytes) -> bool:
    """A binary format's signature, NUL bytes, or many control characters in the first bytes."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 with a BOM: NULs are expected
    if head.startswith(_BINARY_MAGIC):
        return True
    if b"\x00" in head:
        return True
    controls = sum(1 for byte in head if byte < 32 and byte not in (9, 10, 12, 13, 27))
    return controls > max(8, len(head) // 50)


def _check_zip(data: bytes, name: str, limits: GuardLimits) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise DocumentError(f"not a valid .docx (it is not a zip container: {exc})", source=name) from exc
    with archive:
        entries = archive.infolist()
        if len(entries) > limits.max_entries:
            raise DocumentError(
                f"refused: the container holds {len(entries)} entries (limit {limits.max_entries})", source=name
            )
        inflated = sum(entry.file_size for entry in entries)
        packed = sum(entry.compress_size for entry in entries)
        if inflated > limits.max_inflated_bytes:
            raise DocumentError(
                f"refused: its parts inflate to {inflated:,} bytes (limit {limits.max_inflated_bytes:,}), a zip bomb "
                "or a document too large to index",
                source=name,
            )
        if packed and inflated / packed > limits.max_ratio:
            raise DocumentError(
                f"refused: its parts inflate {inflated / packed:.0f}x (limit {limits.max_ratio:.0f}x), a zip bomb",
                source=name,
            )
        if "word/document.xml" not in archive.namelist():
            raise DocumentError("not a .docx (a zip container without word/document.xml)", source=name)


def check_document(data: bytes, name: str, fmt: DocumentFormat, limits: GuardLimits) -> None:
    """Refuse ``data`` unless it is a plausible ``fmt`` document within ``limits``. Raises ``DocumentError``."""
    if not data:
        raise DocumentError("the document is empty (0 bytes)", source=name)
    if len(data) > limits.max_bytes:
        raise DocumentError(f"refused: {len(data):,} bytes is over the {limits.max_bytes:,}-byte limit", source=name)
    head = data[:_SNIFF_BYTES]
    if fmt is DocumentFormat.PDF:
        if b"%PDF-" not in head[:1024]:
            raise DocumentError("not a PDF (no %PDF- header)", source=name)
    elif fmt is DocumentFormat.DOCX:
        if not head.startswith(b"PK"):
            raise DocumentError("not a .docx (it is not a zip container)", source=name)
        _check_zip(data, name, limits)
    elif fmt in _TEXT_FORMATS and _looks_binary(head):
        raise DocumentError(f"refused: binary content in a file named as {fmt.value}", source=name)
