"""Export and import (``hivemem export`` / ``import``, ``GET /v1/export``, ``POST /v1/import``).

An export holds the scopes a caller may read (every one, or those named): every memory in every
state, the relations between them, and the knowledge sources with their chunks (the file's format
is :mod:`hivemem.transfer`). An import takes admin on every scope the file writes to, and on every
scope a memory of the file is in now when the file puts it elsewhere (written by id, it leaves
that scope). It validates the whole file first (a bad line changes nothing), refuses a memory whose
content another memory of its scope already holds under another id, embeds every memory and chunk
with this store's model, and writes them by id: importing the same file twice gives the same
store. It is audited.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Protocol

from pydantic import BaseModel, Field

from api.services.caller import Caller
from api.services.secrets import SecretScreen
from hivemem.access import Role
from hivemem.embedding import Embedder
from hivemem.errors import ValidationError
from hivemem.hashing import content_hash
from hivemem.knowledge import KnowledgeChunk, KnowledgeSource
from hivemem.model import GLOBAL_SCOPE, AuditEvent, DuplicatePolicy, Memory, MemoryState, Relation
from hivemem.transfer import export_lines, read_export
from search.base import KnowledgeStore, MemoryStore, PageMark, RelationStore, SearchFilter
from workers.knowledge_jobs import EMBED_BATCH_CHUNKS, embedded_documents, without_secrets

__all__ = ["ImportResult", "Transfer"]

# Memories embedded in one call (the embedder cuts it into model batches) and written in one
# put_many on import: on OpenSearch each put_many ends with a refresh, so not too few.
_BATCH = 256
# Memories read per store call on export.
_PAGE = 500


class _Stores(MemoryStore, RelationStore, KnowledgeStore, Protocol):
    """The aggregates an export reads and an import writes."""


class ImportResult(BaseModel):
    """What an import wrote."""

    memories: int
    relations: int
    sources: int
    chunks: int
    scopes: list[str]
    redacted: int = Field(default=0, description="Credentials replaced by `[REDACTED:kind]` in what was imported.")


class Transfer:
    """Export and import on one store, embedding with ``embedder``."""

    def __init__(self, store: _Stores, embedder: Embedder, secrets: SecretScreen) -> None:
        self.store = store
        self.embedder = embedder
        self.secrets = secrets

    def _scopes(self, caller: Caller, requested: Sequence[str] | None) -> list[str]:
        if requested:
            # scope_for: a session locked to a project exports that project (and global) only.
            return sorted({caller.scope_for(scope, write=False) for scope in requested})
        if caller.locked:
            return caller.readable(None)
        known = {*self.store.scopes(), *self.store.source_scopes()}
        return sorted(scope for scope in known if caller.may(scope, Role.READ))

    def export(self, caller: Caller, scopes: Sequence[str] | None = None) -> Iterator[str]:
        """The export of ``scopes`` (default: every scope the caller may read), line by line.

        Raises ``PermissionDeniedError`` (before any line) for a named scope the caller may not read.
        """
        chosen = self._scopes(caller, scopes)
        return self._lines(chosen)

    def _lines(self, scopes: list[str]) -> Iterator[str]:
        # Read a page at a time, in the file's order: what is held at once is the exported ids,
        # not the memories (a store of a million held whole, vectors and all, took tens of GB).
        exported: set[str] = set()
        sources = (
            ((s, self.store.source_chunks(s.scope, s.uri)) for s in self.store.sources(scopes)) if scopes else iter(())
        )
        yield from export_lines(self._memories(scopes, exported), self._relations(exported), sources)

    def _ids(self, scope: str) -> list[str]:
        """Every memory id of ``scope``, in every state, sorted."""
        every = SearchFilter(scopes=[scope], states=tuple(MemoryState))
        ids: list[str] = []
        after: PageMark | None = None
        while True:
            page = self.store.list_memories(every, _PAGE, after=after, vectors=False)
            ids += [m.id for m in page]
            if len(page) < _PAGE:
                return sorted(ids)
            after = PageMark(page[-1].created_at, page[-1].id)

    def _memories(self, scopes: list[str], exported: set[str]) -> Iterator[Memory]:
        """The memories of ``scopes`` by scope and id, without vectors; their ids go into ``exported``."""
        for scope in sorted(scopes):
            ids = self._ids(scope)
            exported.update(ids)
            for start in range(0, len(ids), _PAGE):
                yield from self.store.get_many(ids[start : start + _PAGE], vectors=False)

    def _relations(self, exported: set[str]) -> Iterator[Relation]:
        """The edges between exported memories by source, target and type; read once every
        memory has been (``exported`` is complete by then)."""
        ids = sorted(exported)
        for start in range(0, len(ids), _PAGE):
            page = ids[start : start + _PAGE]
            sources = set(page)
            edges = {
                r.key: r for r in self.store.relations_of(page) if r.source_id in sources and r.target_id in exported
            }
            for key in sorted(edges):
                yield edges[key]

    def import_lines(self, lines: Sequence[str] | Callable[[], Iterable[str]], caller: Caller) -> ImportResult:
        """Import an export file: its lines, or a way to read them from the start again (a file on
        disk is read twice and never held whole). Raises ``ValidationError`` (nothing written) for
        a bad file or a content conflict, ``PermissionDeniedError`` without admin on one of its scopes."""
        read: Callable[[], Iterable[str]] = (lambda: lines) if isinstance(lines, Sequence) else lines
        counts, scopes, moved, conflict = self._checked(read())
        for scope in sorted(scopes):
            caller.require(scope, Role.ADMIN)
        for memory_id, held_in in sorted(moved.items()):
            # Written by id, it would leave the scope it is in now.
            caller.require_admin_for(held_in, f"import memory {memory_id} of the file, whose id this store holds")
        if conflict is not None:  # said after the permission checks: it names a memory of the scope
            raise conflict
        chunks = redacted = 0  # a count of this import's: one Transfer serves every import at once
        batch: list[Memory] = []
        edges: list[Relation] = []
        documents: list[tuple[KnowledgeSource, list[KnowledgeChunk]]] = []
        waiting = 0  # chunks of the documents gathered
        for record in read_export(read()):
            if isinstance(record, Memory):
                batch.append(record)
                if len(batch) == _BATCH:
                    redacted += self._put(batch)
                    batch = []
                continue
            redacted += self._put(batch)  # the file lists memories first: a relation's ends are written before it
            batch = []
            if isinstance(record, Relation):
                edges.append(record)
                if len(edges) == _PAGE:
                    self.store.add_relations(edges)
                    edges = []
                continue
            self.store.add_relations(edges)
            edges = []
            documents.append(record)
            chunks += len(record[1])
            waiting += len(record[1])
            if waiting >= EMBED_BATCH_CHUNKS or len(documents) == _PAGE:
                redacted += self._put_documents(documents)
                documents, waiting = [], 0
        redacted += self._put(batch)
        self.store.add_relations(edges)
        redacted += self._put_documents(documents)
        result = ImportResult(
            memories=counts["memory"],
            relations=counts["relation"],
            sources=counts["source"],
            chunks=chunks,
            scopes=sorted(scopes),
            redacted=redacted,
        )
        self.store.audit(AuditEvent("import", "", GLOBAL_SCOPE, caller.principal, result.model_dump()))
        return result

    def _checked(self, lines: Iterable[str]) -> tuple[dict[str, int], set[str], dict[str, str], ValidationError | None]:
        """The file read through once, validated: its records counted by kind, its scopes, the
        memories this store holds in another scope than the file's (id → the scope it is in now),
        and the first memory whose content its scope already holds under another id (the store
        keeps one memory per content and scope), as the error to raise."""
        counts = dict.fromkeys(("memory", "relation", "source"), 0)
        scopes: set[str] = set()
        moved: dict[str, str] = {}
        conflict: ValidationError | None = None
        page: list[Memory] = []
        for record in read_export(lines):
            if isinstance(record, Memory):
                counts["memory"] += 1
                scopes.add(record.scope)
                if self.secrets.policy == "refuse":  # SecretRefused before any write; redact acts in _put
                    self._without_secrets(record)
                page.append(record)
                if len(page) == _PAGE:
                    moved, conflict = self._against_store(page, moved, conflict)
                    page = []
            elif isinstance(record, Relation):
                counts["relation"] += 1
            else:
                counts["source"] += 1
                scopes.add(record[0].scope)
        if page:
            moved, conflict = self._against_store(page, moved, conflict)
        return counts, scopes, moved, conflict

    def _against_store(
        self, page: list[Memory], moved: dict[str, str], conflict: ValidationError | None
    ) -> tuple[dict[str, str], ValidationError | None]:
        """A page of the file's memories held against the store, whose memories of those ids are
        read once for both checks: ``moved`` with the page's memories it holds in another scope (id
        → the scope they are in now), and ``conflict``, or else the page's first content conflict."""
        stored = self.store.get_many([memory.id for memory in page], vectors=False)
        scope_of = {memory.id: memory.scope for memory in page}
        moved = moved | {memory.id: memory.scope for memory in stored if memory.scope != scope_of[memory.id]}
        # The first conflict is the one said: no more store lookups for it after that.
        return moved, conflict or self._conflict(page, stored)

    def _conflict(self, memories: list[Memory], stored: list[Memory]) -> ValidationError | None:
        """The error for the first of ``memories`` whose content its scope holds under another id;
        ``stored``: the store's memories of their ids, which hold their own content."""
        held = self.store.held_contents([(m.scope, m.content_hash) for m in memories])
        if not held:
            return None
        own = {(m.id, m.scope, m.content_hash) for m in stored}
        for memory in memories:
            if (memory.scope, memory.content_hash) not in held or (memory.id, memory.scope, memory.content_hash) in own:
                continue
            holder = self.store.find_by_hash(memory.scope, memory.content_hash)
            return ValidationError(
                f"memory {memory.id}: scope {memory.scope!r} already holds its content as memory "
                f"{holder.id if holder else 'another'}; nothing was imported",
                field="memories",
            )
        return None

    def _without_secrets(self, memory: Memory) -> tuple[Memory, int]:
        """``memory`` as the secret policy lets it be stored (its texts redacted, its content hash
        anew) and how many credentials it lost; ``SecretRefused`` naming it under ``refuse``."""
        texts = {"title": memory.title, "content": memory.content, "tags": memory.tags, "details": memory.details}
        screened, found = self.secrets.value(texts, f"memory {memory.id}")
        if not found:
            return memory, 0
        return replace(memory, **screened, content_hash=content_hash(screened["content"])), len(found)

    def _put(self, memories: list[Memory]) -> int:
        """Embed and write ``memories``; how many credentials were redacted from them."""
        if not memories:
            return 0
        # Under refuse the first read already refused any credential; this one guards a file that
        # changed between the two reads.
        cleaned = [self._without_secrets(m) for m in memories]
        memories = [m for m, _ in cleaned]
        model = self.embedder.model_id  # read first: see workers.jobs.embedded
        vectors = self.embedder.embed_passages([m.embedding_text() for m in memories])
        embedded = [replace(m, embedding=v, embedding_model=model) for m, v in zip(memories, vectors, strict=True)]
        self.store.put_many(embedded, DuplicatePolicy.OVERWRITE)
        return sum(count for _, count in cleaned)

    def _put_documents(self, documents: list[tuple[KnowledgeSource, list[KnowledgeChunk]]]) -> int:
        """Embed the documents' chunks in one call and store them in one batch write; how many
        credentials were redacted from them (documents are redacted, never refused)."""
        if not documents:
            return 0
        cleaned = [(source, *without_secrets(chunks)) for source, chunks in documents]
        self.store.replace_sources(embedded_documents(self.embedder, [(s, kept) for s, kept, _ in cleaned]))
        return sum(count for _, _, count in cleaned)
