"""The export file: a memory store as JSON lines, lossless between the SQLite and OpenSearch stores.

The first line is the header (``{"kind": "header", "format": "hivemem-export", "version": 1}``);
then one line per memory (every field a caller or the lifecycle set: validity, state, provenance,
access counts), per relation between two exported memories, and per knowledge source with its
chunks. Vectors are not exported: they belong to the embedding model of the store that imports
the file, which embeds every memory and chunk again. Lines are written in a fixed order (memories
by scope and id, then relations, then sources), so exporting the same memories from either store
gives the same bytes.

Reading a file validates each line (:func:`read_export`); an error names the line, and an
importer reads the whole file through before it writes anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from hivemem.codec import memory_from_json, memory_to_json
from hivemem.errors import ValidationError
from hivemem.hashing import content_hash
from hivemem.json_depth import too_deep
from hivemem.knowledge import DocumentFormat, KnowledgeChunk, KnowledgeSource, chunk_id
from hivemem.model import Memory, MemoryState, MemoryType, Relation, RelationType, Source
from hivemem.scope import validate_scope

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "Record",
    "export_file_lines",
    "export_lines",
    "read_export",
]

EXPORT_FORMAT = "hivemem-export"
EXPORT_VERSION = 1
# One line of an export holds at most this much (a source's line holds its chunks).
MAX_LINE_BYTES = 64 * 1024 * 1024

_T = TypeVar("_T")
_RECORD = ConfigDict(extra="forbid", frozen=True)
# A memory's fields that its store makes (the vector and its model): not in the file.
_STORE_OWN = frozenset({"embedding", "embedding_model"})
_Text = Annotated[StrictStr, Field(max_length=1_000_000)]
_Id = Annotated[StrictStr, Field(min_length=1, max_length=200)]
_Name = Annotated[StrictStr, Field(max_length=200)]
_Score = Annotated[StrictFloat | StrictInt, Field(ge=0.0, le=1.0)]


class _Header(BaseModel):
    model_config = _RECORD
    kind: Literal["header"]
    format: Literal["hivemem-export"]
    version: Literal[1]


class _MemoryLine(BaseModel):
    model_config = _RECORD
    kind: Literal["memory"]
    id: _Id
    scope: _Name
    title: _Text
    content: _Text
    content_hash: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    memory_type: MemoryType
    importance: _Score
    source: Source
    tags: list[_Name]
    related_files: list[Annotated[StrictStr, Field(max_length=4096)]]
    state: MemoryState
    author: _Name
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: Annotated[StrictInt, Field(ge=0)]
    valid_from: datetime | None
    valid_to: datetime | None
    details: dict[str, Any]
    thread: _Name
    verified_at: datetime | None = None


class _RelationLine(BaseModel):
    model_config = _RECORD
    kind: Literal["relation"]
    source_id: _Id
    target_id: _Id
    type: RelationType
    strength: _Score
    author: _Name
    created_at: datetime
    description: Annotated[StrictStr, Field(max_length=2000)]


class _ChunkLine(BaseModel):
    model_config = _RECORD
    id: _Id
    ordinal: Annotated[StrictInt, Field(ge=0)]
    text: _Text
    title: _Text
    section: list[_Text]
    page: Annotated[StrictInt, Field(ge=1)] | None
    start: Annotated[StrictInt, Field(ge=0)]
    end: Annotated[StrictInt, Field(ge=0)]


class _SourceLine(BaseModel):
    model_config = _RECORD
    kind: Literal["source"]
    scope: _Name
    uri: Annotated[StrictStr, Field(min_length=1, max_length=4096)]
    title: _Text
    format: DocumentFormat
    content_hash: StrictStr
    size: Annotated[StrictInt, Field(ge=0)]
    fetched_at: datetime
    indexed_at: datetime | None
    chunk_count: Annotated[StrictInt, Field(ge=0)]
    last_error: StrictStr | None
    chunks: list[_ChunkLine]


_Line = Annotated[_MemoryLine | _RelationLine | _SourceLine, Field(discriminator="kind")]
_LINE = TypeAdapter(_Line)


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _memory_line(memory: Memory) -> dict[str, Any]:
    # The broker's encoding of a memory, less what belongs to the store that holds it.
    fields = memory_to_json(replace(memory, requested_links=()))
    return {"kind": "memory", **{k: v for k, v in fields.items() if k not in _STORE_OWN}}


def _relation_line(relation: Relation) -> dict[str, Any]:
    return {
        "kind": "relation",
        "source_id": relation.source_id,
        "target_id": relation.target_id,
        "type": relation.type.value,
        "strength": relation.strength,
        "author": relation.author,
        "created_at": _stamp(relation.created_at),
        "description": relation.description,
    }


def _source_line(source: KnowledgeSource, chunks: Iterable[KnowledgeChunk]) -> dict[str, Any]:
    return {
        "kind": "source",
        "scope": source.scope,
        "uri": source.uri,
        "title": source.title,
        "format": source.format.value,
        "content_hash": source.content_hash,
        "size": source.size,
        "fetched_at": _stamp(source.fetched_at),
        "indexed_at": _stamp(source.indexed_at),
        "chunk_count": source.chunk_count,
        "last_error": source.last_error,
        "chunks": [
            {
                "id": c.id,
                "ordinal": c.ordinal,
                "text": c.text,
                "title": c.title,
                "section": list(c.section),
                "page": c.page,
                "start": c.start,
                "end": c.end,
            }
            for c in sorted(chunks, key=lambda c: c.ordinal)
        ],
    }


def _dumped(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _in_order(items: Iterable[_T], key: Callable[[_T], tuple[str, ...]], what: str) -> Iterator[_T]:
    """``items`` as they come, checked to be in strictly increasing ``key`` order."""
    last: tuple[str, ...] | None = None
    for item in items:
        mark = key(item)
        if last is not None and mark <= last:
            raise ValueError(f"{what} out of the export's order: {mark} after {last}")
        last = mark
        yield item


def export_lines(
    memories: Iterable[Memory],
    relations: Iterable[Relation],
    sources: Iterable[tuple[KnowledgeSource, Iterable[KnowledgeChunk]]],
) -> Iterator[str]:
    """The export file, line by line (each without its newline), in its fixed order.

    Each input is read once, item by item, as the lines are written, so a store of any size is
    exported holding one item at a time: ``memories`` by (scope, id), ``relations`` (each between
    two exported memories; read after the last memory) by (source, target, type), ``sources`` by
    (scope, uri). Raises ``ValueError`` for an item out of that order.
    """
    yield _dumped({"kind": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION})
    for memory in _in_order(memories, lambda m: (m.scope, m.id), "memory"):
        yield _dumped(_memory_line(memory))
    for relation in _in_order(relations, lambda r: (r.source_id, r.target_id, r.type.value), "relation"):
        yield _dumped(_relation_line(relation))
    for source, chunks in _in_order(sources, lambda pair: (pair[0].scope, pair[0].uri), "source"):
        yield _dumped(_source_line(source, chunks))


def _memory(raw: dict[str, Any]) -> Memory:
    fields = {k: v for k, v in raw.items() if k != "kind"}
    return memory_from_json({**fields, "embedding": None, "embedding_model": ""})


def _relation(line: _RelationLine) -> Relation:
    return Relation(
        line.source_id, line.target_id, line.type, float(line.strength), line.author, line.created_at, line.description
    )


def _source(line: _SourceLine) -> tuple[KnowledgeSource, list[KnowledgeChunk]]:
    source = KnowledgeSource(
        scope=line.scope,
        uri=line.uri,
        title=line.title,
        format=line.format,
        content_hash=line.content_hash,
        size=line.size,
        fetched_at=line.fetched_at,
        indexed_at=line.indexed_at,
        chunk_count=line.chunk_count,
        last_error=line.last_error,
    )
    chunks = [
        KnowledgeChunk(
            id=c.id,
            scope=line.scope,
            uri=line.uri,
            ordinal=c.ordinal,
            text=c.text,
            title=c.title,
            section=tuple(c.section),
            page=c.page,
            start=c.start,
            end=c.end,
        )
        for c in line.chunks
    ]
    return source, chunks


def _misplaced_chunk(line: _SourceLine) -> str | None:
    """What is wrong with the first chunk of ``line`` whose id is not the one its place gives it
    (:func:`hivemem.knowledge.chunk_id` of the scope, uri, content hash and ordinal), or that
    repeats an ordinal; None when every chunk is in place. A chunk is written by id, and an id is
    bound to its scope: a file naming another scope's chunk would write over it there."""
    ordinals: set[int] = set()
    for chunk in line.chunks:
        if chunk.ordinal in ordinals:
            return f"source {line.uri!r}: chunk ordinal {chunk.ordinal} is given twice"
        ordinals.add(chunk.ordinal)
        if chunk.id != chunk_id(line.scope, line.uri, line.content_hash, chunk.ordinal):
            return (
                f"source {line.uri!r}: chunk {chunk.id} is not the id of chunk {chunk.ordinal} of that "
                f"document in scope {line.scope!r}"
            )
    return None


def _problem(number: int, message: str) -> ValidationError:
    return ValidationError(f"line {number}: {message}", field=f"line {number}")


def _timezones(line: _MemoryLine | _RelationLine | _SourceLine) -> bool:
    stamps = [v for v in line.__dict__.values() if isinstance(v, datetime)]
    return all(v.tzinfo is not None for v in stamps)


Record = Memory | Relation | tuple[KnowledgeSource, list[KnowledgeChunk]]
"""One record of an export file: a memory (without its vector), a relation, a source with its chunks."""


def export_file_lines(text: str) -> list[str]:
    """The lines of an export file held as text. Split at line feeds only: JSON escapes every other
    line break in a string but writes U+2028 and U+2029 as they are, where ``str.splitlines``
    would cut a record in two."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the line feed that ends the last line starts no other
    return [line.removesuffix("\r") for line in lines]


def _content_key(scope: str, digest: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{scope}\x00{digest}".encode(), digest_size=16).digest(), "big")


def read_export(lines: Iterable[str]) -> Iterator[Record]:
    """The records of an export file as its lines are read, each validated first; what it keeps
    between lines is the ids of the memories read so far.

    Raises ``ValidationError`` at the first bad line, naming it: not JSON, an unknown kind or
    field, a value out of range, a content hash that is not the content's, a scope that is no
    scope, a memory id given twice, a content given twice in one scope (a store keeps one memory
    per content and scope), a relation whose ends are not memories of the file (above it), or a
    chunk whose id is not the one its document and ordinal give it; and
    at the end for a file with no header. Records before a bad line have been yielded: a caller
    that must change nothing for a bad file reads it through once before writing.
    """
    memory_ids: set[str] = set()
    contents: set[int] = set()  # each memory's (scope, content hash) as a 128-bit digest: 16 bytes, not 100
    header_seen = False
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if len(text) > MAX_LINE_BYTES:
            raise _problem(number, f"longer than {MAX_LINE_BYTES} bytes")
        nesting = too_deep(text)
        if nesting is not None:  # measured first: the parser recurses once a level
            raise _problem(number, f"not JSON hivemem reads (it {nesting})")
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _problem(number, f"not JSON ({exc.msg})") from None
        if not header_seen:
            try:
                _Header.model_validate(raw)
            except PydanticValidationError:
                raise _problem(
                    number, f'not a {EXPORT_FORMAT} file: the first line must be {{"kind": "header", …, "version": 1}}'
                ) from None
            header_seen = True
            continue
        if isinstance(raw, dict) and raw.get("kind") == "error":
            raise _problem(number, f"the export that wrote this file failed there: {raw.get('message', '?')}")
        try:
            line = _LINE.validate_python(raw)
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise _problem(number, f"{where}: {first['msg']}") from None
        if not _timezones(line):
            raise _problem(number, "every time must carry its timezone")
        if not isinstance(line, _RelationLine):
            try:
                validate_scope(line.scope)
            except ValidationError as exc:
                raise _problem(number, str(exc)) from None
        if isinstance(line, _MemoryLine):
            if line.id in memory_ids:
                raise _problem(number, f"memory {line.id} is given twice")
            if content_hash(line.content) != line.content_hash:
                raise _problem(number, f"memory {line.id}: content_hash is not the hash of its content")
            held = _content_key(line.scope, line.content_hash)
            if held in contents:
                raise _problem(number, f"memory {line.id}: the file holds its content in scope {line.scope!r} twice")
            memory_ids.add(line.id)
            contents.add(held)
            yield _memory(raw)
        elif isinstance(line, _RelationLine):
            missing = [end for end in (line.source_id, line.target_id) if end not in memory_ids]
            if missing:
                raise _problem(number, f"relation end {missing[0]} is not a memory of the file (above this line)")
            yield _relation(line)
        else:
            wrong = _misplaced_chunk(line)
            if wrong is not None:
                raise _problem(number, wrong)
            yield _source(line)
    if not header_seen:
        raise ValidationError(f"the file is empty: an export starts with its {EXPORT_FORMAT} header", field="line 1")
