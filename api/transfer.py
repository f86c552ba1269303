"""Export and import (``hivemem export`` / ``import``, ``GET /v1/export``, ``POST /v1/import``).

An export holds the scopes a caller may read (every one, or those named): every memory in every
state, the relations between them, and the knowledge sources with their chunks (the file's format
is :mod:`hivemem.transfer`). An import takes admin on every scope the file writes to, validates the
whole file first (a bad line changes nothing), refuses a memory whose content another memory of its
scope already holds under another id, embeds every memory and chunk with this store's model, and
writes them by id: importing the same file twice gives the same store. It is audited.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Protocol

from pydantic import BaseModel

from api.caller import Caller
from hivemem.access import Role
from hivemem.embedding import Embedder
from hivemem.errors import ValidationError
from hivemem.knowledge import KnowledgeChunk
from hivemem.model import GLOBAL_SCOPE, AuditEvent, DuplicatePolicy, Memory, MemoryState, Relation
from hivemem.transfer import ExportContents, export_lines, parse_export
from search.base import KnowledgeStore, MemoryStore, RelationStore, SearchFilter

__all__ = ["ImportResult", "Transfer"]

# Memories embedded per model call on import.
_BATCH = 64
# No scope holds more memories than this (a list's upper bound, not a page size).
_EVERY = 2**31 - 1


class _Stores(MemoryStore, RelationStore, KnowledgeStore, Protocol):
    """The aggregates an export reads and an import writes."""


class ImportResult(BaseModel):
    """What an import wrote."""

    memories: int
    relations: int
    sources: int
    chunks: int
    scopes: list[str]


class Transfer:
    """Export and import on one store, embedding with ``embedder``."""

    def __init__(self, store: _Stores, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def _scopes(self, caller: Caller, requested: Sequence[str] | None) -> list[str]:
        if requested:
            return sorted({caller.require(scope, Role.READ) for scope in requested})
        known = {*self.store.scopes(), *self.store.source_scopes()}
        return sorted(scope for scope in known if caller.may(scope, Role.READ))

    def export(self, caller: Caller, scopes: Sequence[str] | None = None) -> Iterator[str]:
        """The export of ``scopes`` (default: every scope the caller may read), line by line.

        Raises ``PermissionDeniedError`` (before any line) for a named scope the caller may not read.
        """
        chosen = self._scopes(caller, scopes)
        return self._lines(chosen)

    def _lines(self, scopes: list[str]) -> Iterator[str]:
        memories: list[Memory] = []
        for scope in scopes:
            every = SearchFilter(scopes=[scope], states=tuple(MemoryState))
            memories += [replace(m, embedding=None) for m in self.store.list_memories(every, _EVERY)]
        relations: list[Relation] = [r for m in memories for r in self.store.relations(m.id) if r.source_id == m.id]
        sources = [(s, self.store.source_chunks(s.scope, s.uri)) for s in self.store.sources(scopes)] if scopes else []
        yield from export_lines(memories, relations, sources)

    def import_lines(self, lines: Iterable[str], caller: Caller) -> ImportResult:
        """Import an export file. Raises ``ValidationError`` (nothing written) for a bad file or a
        content conflict, ``PermissionDeniedError`` without admin on one of its scopes."""
        contents = parse_export(lines)
        for scope in sorted(contents.scopes):
            caller.require(scope, Role.ADMIN)
        self._check_conflicts(contents)
        for start in range(0, len(contents.memories), _BATCH):
            batch = contents.memories[start : start + _BATCH]
            model = self.embedder.model_id  # read first: see workers.jobs.embedded
            vectors = self.embedder.embed_passages([m.embedding_text() for m in batch])
            for memory, vector in zip(batch, vectors, strict=True):
                embedded = replace(memory, embedding=vector, embedding_model=model)
                self.store.put(embedded, DuplicatePolicy.OVERWRITE)
        for relation in contents.relations:
            self.store.add_relation(relation)
        chunks = 0
        for source, pieces in contents.sources:
            self.store.replace_source(source, self._embedded(pieces))
            chunks += len(pieces)
        result = ImportResult(
            memories=len(contents.memories),
            relations=len(contents.relations),
            sources=len(contents.sources),
            chunks=chunks,
            scopes=sorted(contents.scopes),
        )
        self.store.audit(AuditEvent("import", "", GLOBAL_SCOPE, caller.principal, result.model_dump()))
        return result

    def _embedded(self, chunks: list[KnowledgeChunk]) -> list[KnowledgeChunk]:
        if not chunks:
            return []
        vectors = self.embedder.embed_documents([c.context for c in chunks])
        return [replace(c, embedding=tuple(v)) for c, v in zip(chunks, vectors, strict=True)]

    def _check_conflicts(self, contents: ExportContents) -> None:
        """Refuse the file when a memory's content is already held in its scope under another id
        (the store keeps one memory per content and scope), naming the first such memory."""
        for memory in contents.memories:
            held = self.store.find_by_hash(memory.scope, memory.content_hash)
            if held is not None and held.id != memory.id:
                raise ValidationError(
                    f"memory {memory.id}: scope {memory.scope!r} already holds its content as memory {held.id}; "
                    "nothing was imported",
                    field="memories",
                )
