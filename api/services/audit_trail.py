"""The audit trail as callers read it: records, newest first, without memory text, under the
caller's grants; and undoing what a record names (:mod:`api.services.undo`)."""

from __future__ import annotations

from api.services.caller import Caller
from api.services.undo import changed_scopes, undo
from hivemem.access import Role
from hivemem.answers import AuditPublic, UndoResult
from hivemem.audit import AuditQuery
from hivemem.audit_schemas import AuditRequest
from hivemem.embedding import Embedder
from hivemem.errors import AuditNotFoundError, PermissionDeniedError, ValidationError
from search import Store

__all__ = ["AuditTrail"]


class AuditTrail:
    """The audit records of one store, and undo."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def search(self, request: AuditRequest, caller: Caller = Caller()) -> list[AuditPublic]:
        """Audit records, newest first, without memory text (:func:`hivemem.audit.public_detail`).

        With ``memory_id``: that memory's records (it may be gone: a forget is audited) of the
        caller's scope (or ``request.scope``) plus global, for anyone who may read there. Without:
        the whole log (narrowed to ``request.scope`` if given), for an admin on ``*`` only.
        """
        if request.memory_id is not None:
            scopes: list[str] | None = caller.readable(request.scope)
        else:
            caller.require_everything("read the whole audit log")
            scopes = None if request.scope is None else [request.scope]
        query = AuditQuery(
            memory_id=request.memory_id,
            actions=tuple(request.action or ()),
            author=request.principal,
            scopes=scopes,
            since=request.since,
            until=request.until,
            limit=request.limit,
        )
        return [AuditPublic.of(e) for e in self.store.audit_search(query)]

    def undo(self, audit_id: str, caller: Caller = Caller()) -> UndoResult:
        """Undo the merge or supersede an audit record names (see :mod:`api.services.undo`).

        Raises ``AuditNotFoundError`` for an unknown id or one outside the caller's scopes,
        ``PermissionDeniedError`` without admin on the record's scope and on the scope of every
        memory the undo would change, and ``UndoRefused`` for another action or a record already
        undone.
        """
        event = self.store.audit_event(audit_id)
        try:
            caller.scope_for(event.scope, write=False)
        except (ValidationError, PermissionDeniedError):
            raise AuditNotFoundError(f"no audit record with id {audit_id}") from None
        caller.require(event.scope, Role.ADMIN)
        # What it puts back may lie in another scope: a supersede or a consolidation reaches across
        # an edge to the global scope, or from it.
        for scope in sorted(changed_scopes(self.store, event) - {event.scope}):
            caller.require_admin_for(scope, f"undo audit record {audit_id}")
        restored = undo(self.store, self.embedder, event, caller.principal)
        return UndoResult(audit_id=event.id, action=event.action, restored=restored)
