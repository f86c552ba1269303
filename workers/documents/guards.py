"""Checks that run before any parser sees a document: size, format by content, zip bombs.

A parser is a large body of code that trusts its input more than it should: python-docx spent
9.7 s and 2 GB on a 1 GiB ``document.xml`` before failing. So the bytes are judged first, in
milliseconds: the extension must be one hivemem reads, the content must be what the extension
claims (a binary named ``.txt`` is refused), and a zip container's central directory must declare
sizes, a compression ratio and an entry count within limits before anything is inflated.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
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
    """How much a document may hold: its bytes, and (zip containers) what its entries inflate to.
    The configured ones: ``workers.knowledge_jobs.guard_limits``."""

    max_bytes: int
    max_inflated_bytes: int
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
        for entry in entries:
            _inflate_bounded(data, entry, name)


# How much of a zip member is inflated at a time. zipfile's read() of a whole member inflates its
# entire stream before it checks the declared size (a 306 KB upload whose headers understated its
# parts took 648 MB), and stops at the declared size without looking at what is left; so each
# member is inflated here from its raw bytes, this much at a time, to its very end.
_INFLATE_CHUNK = 1 << 16
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature ... file name length, extra field length


def _raw_member(data: bytes, entry: zipfile.ZipInfo) -> memoryview:
    """The compressed bytes of ``entry``, found through its local header."""
    fields = _LOCAL_HEADER.unpack_from(data, entry.header_offset)
    if fields[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile("no local header where the directory points")
    start = entry.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]
    if start + entry.compress_size > len(data):
        raise zipfile.BadZipFile("the part runs past the end of the file")
    return memoryview(data)[start : start + entry.compress_size]


def _inflated_size(raw: memoryview, declared: int) -> int:
    """How many bytes ``raw`` (a deflate stream) inflates to, counting no further than one chunk
    past ``declared``; never more than ``_INFLATE_CHUNK`` bytes are held at once."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    inflated = 0
    for at in range(0, len(raw), _INFLATE_CHUNK):
        pending = bytes(raw[at : at + _INFLATE_CHUNK])
        while inflated <= declared:
            out = inflater.decompress(pending, _INFLATE_CHUNK)
            inflated += len(out)
            pending = inflater.unconsumed_tail
            if not pending and len(out) < _INFLATE_CHUNK:  # this input is spent and nothing is held back
                break
        if inflated > declared or inflater.eof:
            break
    if not inflater.eof and inflated <= declared:
        raise zipfile.BadZipFile("the compressed stream ends early")
    return inflated


def _inflate_bounded(data: bytes, entry: zipfile.ZipInfo, name: str) -> None:
    """Inflate ``entry`` to its end, a chunk at a time: it must give exactly its declared size. The
    declared sizes were checked against the limits, so this bounds what the parser will inflate."""
    try:
        raw = _raw_member(data, entry)
        if entry.compress_type == zipfile.ZIP_STORED:
            inflated = len(raw)
        elif entry.compress_type == zipfile.ZIP_DEFLATED:
            inflated = _inflated_size(raw, entry.file_size)
        else:
            raise zipfile.BadZipFile(f"compression method {entry.compress_type}, which Word never writes")
        if inflated != entry.file_size:
            more = "more than " if inflated > entry.file_size else ""
            raise zipfile.BadZipFile(f"it inflates to {more}{inflated:,} bytes where {entry.file_size:,} are declared")
    except (zipfile.BadZipFile, struct.error, zlib.error) as exc:
        raise DocumentError(
            f"refused: part {entry.filename!r} is not what its header declares: {exc}", source=name
        ) from exc


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
