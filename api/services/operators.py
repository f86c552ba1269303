"""What operators do with the memories themselves: list them a page at a time, edit one, count
each scope. REST (``GET /v1/memories``, ``PATCH /v1/memories/{id}``, ``GET /v1/scopes``) and the
CLI (``hivemem memories …``) call these; every one goes through the caller's grants."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Protocol

from api.services.caller import Caller
from api.services.secrets import SecretScreen
from hivemem.access import Role
from hivemem.answers import MemoryPublic, Redaction
from hivemem.embedding import Embedder
from hivemem.errors import ValidationError
from hivemem.hashing import content_hash
from hivemem.listing_schemas import MAX_PAGE, MemoryPage, MemoryUpdate, ScopeStats, decode_cursor, encode_cursor
from hivemem.model import AuditEvent, DuplicatePolicy, MemoryState, MemoryType, utcnow
from search.base import KnowledgeStore, MemoryStore, PageMark, RelationStore, SearchFilter

__all__ = ["Operators"]


class _Stores(MemoryStore, RelationStore, KnowledgeStore, Protocol):
    """The aggregates these read and write: memories, the audit log, and (counted) documents."""


class Operators:
    """Listing, editing and counting over one store; edits embed with ``embedder``."""

    def __init__(self, store: _Stores, embedder: Embedder, secrets: SecretScreen) -> None:
        self.store = store
        self.embedder = embedder
        self.secrets = secrets

    def page(
        self,
        caller: Caller,
        *,
        scope: str | None = None,
        memory_type: MemoryType | None = None,
        state: MemoryState | None = None,
        tag: str | None = None,
        author: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> MemoryPage:
        """One page of the memories of ``scope`` (default: the caller's), newest first, every state
        unless ``state`` names one. Raises ``PermissionDeniedError`` without read there and
        ``ValidationError`` for a cursor this server did not give, or a ``limit`` outside 1 to
        ``MAX_PAGE``."""
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit: a page holds 1 to {MAX_PAGE} memories, not {limit}", field="limit")
        where = SearchFilter(
            scopes=[caller.scope_for(scope, write=False)],
            states=tuple(MemoryState) if state is None else (state,),
            memory_types=() if memory_type is None else (memory_type,),
            tags=() if tag is None else (tag,),
            created_after=created_after,
            created_before=created_before,
        )
        after = None if cursor is None else PageMark(*decode_cursor(cursor))
        authors = () if author is None else (author,)
        # One more than the page says whether another follows.
        found = self.store.list_memories(where, limit + 1, authors=authors, after=after, vectors=False)
        shown = found[:limit]
        more = len(found) > limit
        return MemoryPage(
            memories=[MemoryPublic.of(m) for m in shown],
            next_cursor=encode_cursor(shown[-1].created_at, shown[-1].id) if more else None,
        )

    def update(
        self, memory_id: str, change: MemoryUpdate, caller: Caller, *, scope: str | None = None
    ) -> tuple[MemoryPublic, list[Redaction]]:
        """Edit a memory the caller can read: its own with write on its scope, anyone's with admin.
        A new title or content is embedded again. Audited (``update``). Raises ``MemoryNotFoundError``
        (also for a memory outside the caller's scopes), ``PermissionDeniedError``, ``SecretRefused``
        for a credential in the new text (or replaces it: the redactions come back beside the
        memory), and ``DuplicateMemoryError`` when the new content is another memory's in that scope."""
        memory = caller.visible(self.store.get(memory_id), scope)
        caller.require_changing(memory)
        change, redacted = self.secrets.model(
            change, [f for f in ("title", "content", "tags") if f in change.model_fields_set]
        )
        fields = change.model_dump(exclude_unset=True)
        edited = replace(memory, **fields, updated_at=utcnow())
        if "tags" in fields:
            edited = replace(edited, tags=sorted(set(edited.tags)))
        if "title" in fields or "content" in fields:
            model = self.embedder.model_id  # read first: see workers.jobs.embedded
            vector = self.embedder.embed_passages([edited.embedding_text()])[0]
            edited = replace(edited, content_hash=content_hash(edited.content), embedding=vector, embedding_model=model)
        if not self.store.put(edited, DuplicatePolicy.UPDATE):
            raise caller.not_found(memory_id, scope)  # forgotten while it was being edited: it stays forgotten
        detail = {"changed": sorted(fields), "content_hash_before": memory.content_hash}
        self.store.audit(AuditEvent("update", memory.id, memory.scope, caller.principal, detail))
        return MemoryPublic.of(edited), redacted

    def verify(self, memory_id: str, caller: Caller, *, scope: str | None = None) -> MemoryPublic:
        """Say that a memory the caller can read still holds: its ``verified_at`` becomes now, which
        clears a stale label. Takes write on the memory's scope (a teammate may vouch for another's
        fact); audited (``verify``). Raises ``MemoryNotFoundError`` as ``get`` does, and
        ``PermissionDeniedError`` without write there."""
        memory = caller.visible(self.store.get(memory_id), scope)
        caller.require(memory.scope, Role.WRITE)
        verified = replace(memory, verified_at=utcnow())
        if not self.store.put(verified, DuplicatePolicy.UPDATE):
            raise caller.not_found(memory_id, scope)
        detail = {"verified_before": memory.last_verified.isoformat()}
        self.store.audit(AuditEvent("verify", memory.id, memory.scope, caller.principal, detail))
        return MemoryPublic.of(verified)

    def scope_stats(self, caller: Caller) -> list[ScopeStats]:
        """Every scope holding memories or documents that the caller may read, with its memories'
        counts (one store read) and its documents and their chunks (one read of the sources)."""
        tallies = {scope: t for scope, t in self.store.tally_by_scope().items() if caller.may(scope, Role.READ)}
        # Counted as the status counts them (KnowledgeSource.searchable, .failed).
        documents: dict[str, list[int]] = {}
        for source in self.store.sources([s for s in self.store.source_scopes() if caller.may(s, Role.READ)]):
            held = documents.setdefault(source.scope, [0, 0, 0])
            held[0] += source.searchable
            held[1] += source.chunk_count
            held[2] += source.failed
        stats = []
        for scope in sorted({*tallies, *documents}):
            tally = tallies.get(scope, {})
            by_type: dict[str, int] = {}
            by_state: dict[str, int] = {}
            for (memory_type, state), count in tally.items():
                by_type[memory_type.value] = by_type.get(memory_type.value, 0) + count
                by_state[state.value] = by_state.get(state.value, 0) + count
            docs, chunks, failed = documents.get(scope, (0, 0, 0))
            stats.append(
                ScopeStats(
                    scope=scope,
                    memories=sum(tally.values()),
                    by_type=by_type,
                    by_state=by_state,
                    documents=docs,
                    chunks=chunks,
                    documents_failed=failed,
                )
            )
        return stats
