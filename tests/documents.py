"""Small real documents for the knowledge tests, written by the libraries people write them with.

Each good document holds one rare term (for an exact search) and one fact worth asking about in
other words (for a paraphrased one), under a heading or on a page the citation must name.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

__all__ = ["BAD_DOCUMENTS", "GOOD_DOCUMENTS", "write_bad", "write_good"]

# name -> (rare term, paraphrased question, the section or page the answer is under)
GOOD_DOCUMENTS: dict[str, tuple[str, str, str | int]] = {
    "reactor.pdf": ("zorblaxite", "what has to happen to the coolant pump before starting it", 2),
    "deploy.docx": ("quibblefrost", "how do I undo a broken deployment", "Rollback"),
    "cache.html": ("plinkwort", "how long are responses from the slow upstream kept", "Caching"),
    "ops.md": ("glimmerstone", "at what time of night are backups made", "Backups"),
    "notes.txt": ("snorkelwax", "which coffee does the team order for the office", ""),
}

BAD_DOCUMENTS: dict[str, str] = {
    "corrupt.pdf": "damaged",
    "encrypted.pdf": "encrypted",
    "scan.pdf": "no text layer (needs OCR)",
    "bomb.docx": "zip bomb",
    "notzip.docx": "not a zip container",
    "empty.md": "empty (0 bytes)",
    "binary.txt": "binary content",
    "big.txt": "over the",
    "drawing.xcf": "unsupported format",
    "deep.html": "nested deeper than 256 levels",
}


def _pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Reactor operations manual")
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.start_section("Introduction")
    pdf.multi_cell(0, 6, "This manual describes the daily operation of the research reactor and its safety systems.")
    pdf.add_page()
    pdf.start_section("Cooling")
    pdf.multi_cell(
        0,
        6,
        "The coolant pump must be primed with water before it is started, otherwise the seals run dry. "
        "Flow is regulated by zorblaxite valves on the secondary loop.",
    )
    pdf.add_page()
    pdf.start_section("Shutdown")
    pdf.multi_cell(0, 6, "To shut the reactor down, lower the control rods slowly over ten minutes.")
    pdf.output(str(path))


def _docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Deploy guide"
    document.add_heading("Deploy guide", 0)
    document.add_heading("Releasing", 1)
    document.add_paragraph("Releases are cut from the main branch every Tuesday after the tests pass.")
    document.add_heading("Rollback", 1)
    document.add_paragraph("Run quibblefrost revert to go back to the previous release; it restores the last image.")
    table = document.add_table(rows=2, cols=2)
    for (row, col), text in {(0, 0): "env", (0, 1): "host", (1, 0): "prod", (1, 1): "app-1"}.items():
        table.cell(row, col).text = text
    document.save(str(path))


_HTML = """<!doctype html><html><head><title>Cache notes</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | <a href="/login">Login</a></nav>
<div id="cookie-banner">We use cookies. Accept all cookies?</div>
<article><h1>Caching</h1>
<p>We keep the plinkwort responses for five minutes because the upstream service is slow and rate limited.
Every gateway instance holds its own copy, so a deploy starts with a cold cache.</p>
<h2>Invalidation</h2>
<p>Invalidate on every deploy with the purge endpoint, which clears every edge node in under a second.</p>
</article><footer>Copyright 2026 Example Corp. All rights reserved.</footer></body></html>"""

_MARKDOWN = """---
owner: ops
---
Operations notes
================

Everything the on-call engineer needs on the first day.

## Backups

Nightly backups go to the glimmerstone bucket at 02:00 UTC and are kept for thirty days.

## Restore

```sh
restore --from the-backup-bucket --date yesterday

restore --verify
```
"""

_TEXT = (
    "Office notes\n\nThe team orders snorkelwax roasted beans from the shop around the corner.\n\n"
    "The printer is on the second floor."
)


def write_good(folder: Path) -> dict[str, Path]:
    """Write every good document into ``folder``; their paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    _pdf(folder / "reactor.pdf")
    _docx(folder / "deploy.docx")
    (folder / "cache.html").write_text(_HTML, encoding="utf-8")
    (folder / "ops.md").write_text(_MARKDOWN, encoding="utf-8")
    # Latin-1, not UTF-8: the decoder has to find out.
    (folder / "notes.txt").write_bytes(
        (_TEXT + "\n\nCaf\u00e9 au lait at 10:00, cr\u00e8me br\u00fbl\u00e9e on Fridays.").encode("latin-1")
    )
    return {name: folder / name for name in GOOD_DOCUMENTS}


def write_bad(folder: Path, *, big_bytes: int) -> dict[str, Path]:
    """Write every bad document into ``folder`` (``big.txt`` holds ``big_bytes`` bytes); paths by name."""
    from fpdf import FPDF

    folder.mkdir(parents=True, exist_ok=True)
    good_pdf = io.BytesIO()
    sample = FPDF()
    sample.add_page()
    sample.set_font("Helvetica", size=12)
    sample.cell(0, 10, "a secret text")
    sample.output(good_pdf)
    data = good_pdf.getvalue()
    (folder / "corrupt.pdf").write_bytes(data[:9] + b"\x00garbage" * 40)
    locked = FPDF()
    locked.add_page()
    locked.set_font("Helvetica", size=12)
    locked.cell(0, 10, "a secret text")
    locked.set_encryption(owner_password="owner", user_password="user")
    locked.output(str(folder / "encrypted.pdf"))
    scan = FPDF()
    scan.add_page()
    scan.rect(10, 10, 80, 40, style="F")
    scan.output(str(folder / "scan.pdf"))
    with zipfile.ZipFile(folder / "bomb.docx", "w", compression=zipfile.ZIP_DEFLATED) as bomb:
        bomb.writestr("[Content_Types].xml", "<Types/>")
        # 64 MB of zeros squeezed into ~64 KB: the guard must refuse it from the zip's directory alone.
        with bomb.open("word/document.xml", "w", force_zip64=True) as part:
            block = b"\x00" * (1 << 20)
            for _ in range(64):
                part.write(block)
    (folder / "notzip.docx").write_text("this is plain text pretending to be a Word document", encoding="utf-8")
    (folder / "empty.md").write_bytes(b"")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 20)
    (folder / "big.txt").write_bytes(b"word " * (big_bytes // 5 + 1))
    (folder / "drawing.xcf").write_bytes(b"gimp xcf v011")
    (folder / "deep.html").write_text("<html><body>" + "<div>" * 20_000 + "deep" + "</div>" * 20_000 + "</body></html>")
    return {name: folder / name for name in BAD_DOCUMENTS}


def lying_docx(path: Path, *, packed_bytes: int) -> Path:
    """A real .docx whose ``word/document.xml`` headers understate it: about ``packed_bytes`` of
    deflated zeros (a thousand times that inflated) declared as 1 KiB, with the CRC of its first
    KiB, so that every size and ratio the zip's directory states is within any guard's limits."""
    import zlib

    _docx(path)
    declared = b"\x00" * 1024
    squeezer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    # A fully flushed block is byte-aligned and independent of what came before: repeated, it
    # continues the same stream.
    block = squeezer.compress(b"\x00" * (1 << 20)) + squeezer.flush(zlib.Z_FULL_FLUSH)
    stream = block * max(1, packed_bytes // len(block)) + squeezer.flush(zlib.Z_FINISH)
    name = b"word/document.xml"
    crc = zlib.crc32(declared)
    local = b"PK\x03\x04" + (20).to_bytes(2, "little") + bytes(2) + (8).to_bytes(2, "little") + bytes(4)
    local += crc.to_bytes(4, "little") + len(stream).to_bytes(4, "little") + len(declared).to_bytes(4, "little")
    local += len(name).to_bytes(2, "little") + bytes(2) + name
    with zipfile.ZipFile(path) as original:
        parts = [(info, original.read(info)) for info in original.infolist() if info.filename != name.decode()]
    with path.open("wb") as out, zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as rebuilt:
        for info, data in parts:
            rebuilt.writestr(info, data)
        rebuilt.fp.flush()  # type: ignore[union-attr]
        offset = out.tell()
        out.write(local + stream)
        lie = zipfile.ZipInfo(name.decode(), date_time=(2026, 1, 1, 0, 0, 0))
        lie.compress_type, lie.header_offset, lie.CRC = zipfile.ZIP_DEFLATED, offset, crc
        lie.compress_size, lie.file_size = len(stream), len(declared)
        rebuilt.filelist.append(lie)
        rebuilt.NameToInfo[lie.filename] = lie
        rebuilt.start_dir = out.tell()
    return path
