"""The audit of denied requests: who was refused what, where, and through which request.

A refusal for want of a grant (403) is recorded by the caller's ``on_denied`` hook (see
:class:`api.services.caller.Caller`); a bad token (401) by the authenticator. Neither record holds a token or
any memory text. Recording never changes the answer: when the store cannot take the record, the
refusal still goes out and the failure is logged.
"""

from __future__ import annotations

import logging

from api.services.caller import Caller, OnDenied
from hivemem.access import Role
from hivemem.audit import DENIED
from hivemem.errors import StoreError
from hivemem.model import GLOBAL_SCOPE, AuditEvent
from search.base import RelationStore

__all__ = ["ANONYMOUS", "audit_denial", "denial_recorder", "token_refusal"]

log = logging.getLogger(__name__)

# The author of a record about a token nobody could be identified by.
ANONYMOUS = "(unknown)"


def audit_denial(store: RelationStore, event: AuditEvent) -> None:
    """Append ``event`` (a denial) to the log; a store that cannot take it is logged, not raised."""
    try:
        store.audit(event)
    except StoreError as exc:
        log.warning("could not audit a denied request (%s): %s", event.detail.get("request", "?"), exc)


def denial_recorder(store: RelationStore, request: str) -> OnDenied:
    """The ``on_denied`` hook of a caller of ``request`` (e.g. ``POST /v1/memories``, ``mcp memorize``)."""

    def record(caller: Caller, scope: str, needed: Role) -> None:
        detail = {"request": request, "needed": needed.value, "status": 403}
        audit_denial(store, AuditEvent(DENIED, "", scope, caller.principal, detail))

    return record


def token_refusal(token_id: str | None, principal: str | None, address: str, reason: str) -> AuditEvent:
    """The record of a request refused for its token (401): the token's id, never the token."""
    detail = {"request": "authenticate", "address": address, "reason": reason, "status": 401}
    return AuditEvent(DENIED, token_id or "", GLOBAL_SCOPE, principal or ANONYMOUS, detail)
