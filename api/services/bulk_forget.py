"""Forget in bulk, after a preview: the memories of one scope that a query and/or filters match.

A call without ``confirm`` answers a dry run: how many match, the first titles, and a token, a hash
of the matching ids. A call with ``confirm`` finds the set again and deletes it only when its token
is the one given: a delete without the preview's token, or after the set changed (a memory written,
edited or forgotten meanwhile), is refused and deletes nothing. Both take admin on the scope (every
caller of a local server has it); each memory deleted is audited as a ``forget`` carrying the token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from api.services.caller import Caller
from hivemem.access import Role
from hivemem.errors import ConfirmationRequired, PreviewChangedError, ValidationError
from hivemem.forget_schemas import MAX_BULK_FORGET, BulkForgetAnswer, BulkForgetRequest, ForgetPreviewItem
from hivemem.model import AuditEvent, Memory, utcnow
from hivemem.wording import counted
from search import SearchFilter, Store
from search.base import DEFAULT_STATES
from search.recall import Recaller

__all__ = ["forget_matching"]

_SHOWN = 10


def _token(scope: str, memories: Sequence[Memory]) -> str:
    ids = "\n".join(sorted(m.id for m in memories))
    return hashlib.sha256(f"{scope}\n{ids}".encode()).hexdigest()[:32]


def _matching(store: Store, recaller: Recaller, request: BulkForgetRequest, scope: str) -> list[Memory]:
    where = SearchFilter(
        scopes=[scope],
        memory_types=tuple(request.memory_types or ()),
        states=tuple(dict.fromkeys(request.states)) if request.states else DEFAULT_STATES,
        tags=tuple(request.tags or ()),
        created_after=request.created_after,
        created_before=request.created_before,
    )
    authors = () if request.author is None else (request.author,)
    if request.query is None:
        return store.list_memories(where, MAX_BULK_FORGET + 1, authors=authors, vectors=False)
    hits = recaller.recall([request.query], where, limit=request.limit, now=utcnow())
    return [h.memory for h in hits if not authors or h.memory.author in authors]


def forget_matching(store: Store, recaller: Recaller, request: BulkForgetRequest, caller: Caller) -> BulkForgetAnswer:
    """The dry run of ``request``, or (``confirm``) its delete; see the module's docstring."""
    scope = caller.scope_for(request.scope, write=True)
    caller.require(scope, Role.ADMIN)
    found = _matching(store, recaller, request, scope)
    token = _token(scope, found)
    first = [
        ForgetPreviewItem(id=m.id, title=m.title, memory_type=m.memory_type, created_at=m.created_at.isoformat())
        for m in found[:_SHOWN]
    ]
    answer = BulkForgetAnswer(scope=scope, count=len(found), first=first, preview_token=token, said="")
    too_many = f"more than {MAX_BULK_FORGET} memories match: narrow the filters"
    if len(found) > MAX_BULK_FORGET:
        if request.confirm:
            raise ValidationError(f"{too_many}; nothing was forgotten", field="confirm")
        return answer.model_copy(update={"said": too_many})  # count: one more than the most, so "more than"
    if not request.confirm:
        match = "1 memory matches; forget it" if len(found) == 1 else f"{len(found)} memories match; forget them"
        return answer.model_copy(update={"said": f"{match} with confirm: true and this preview_token"})
    if request.preview_token is None:
        raise ConfirmationRequired("preview_token: run the same call without confirm first, and give back its token")
    if request.preview_token != token:
        raise PreviewChangedError(
            "the memories this call matches are no longer those of the preview (written, edited or forgotten "
            "since): preview again; nothing was forgotten"
        )
    for memory in found:
        removed = store.delete(memory.id)
        detail = {"content_hash": removed.content_hash, "memory_type": removed.memory_type.value, "bulk": token}
        store.audit(AuditEvent("forget", removed.id, removed.scope, caller.principal, detail))
    said = f"forgot {counted(len(found), 'memory', 'memories')} of {scope or 'the global scope'}"
    return answer.model_copy(update={"forgotten": [m.id for m in found], "said": said})
