"""Creating, listing and revoking tokens (``hivemem token …`` and ``/v1/tokens``), each audited.

Only a caller that manages tokens (admin on ``*``, or the trusted local caller: the CLI on the
server's machine) may call these.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from api.services.caller import Caller
from hivemem.access import Grant, Role
from hivemem.model import GLOBAL_SCOPE, AuditEvent, utcnow
from hivemem.token_schemas import TokenCreate, TokenIssued, TokenPublic, WhoAmI
from hivemem.tokens import issue_token
from search.base import RelationStore, TokenStore

__all__ = ["FIRST_ADMIN", "TokenService"]

FIRST_ADMIN = "admin"


class _Stores(TokenStore, RelationStore, Protocol):
    """The aggregates tokens need: their records, and the audit log."""


class TokenService:
    """Tokens of one store, hashed with the server's ``key``."""

    def __init__(self, store: _Stores, key: bytes) -> None:
        self.store = store
        self.key = key

    @staticmethod
    def _check(caller: Caller) -> None:
        caller.require_everything("manage tokens")

    def _audit(self, action: str, caller: Caller, token_id: str, detail: dict[str, object]) -> None:
        self.store.audit(AuditEvent(action, token_id, GLOBAL_SCOPE, caller.principal, {"token_id": token_id, **detail}))

    def create(self, request: TokenCreate, caller: Caller) -> TokenIssued:
        """A new token; the answer is the only place its secret ever appears."""
        self._check(caller)
        now = utcnow()
        expires = None if request.expires_in_days is None else now + timedelta(days=request.expires_in_days)
        issued = issue_token(
            request.name,
            request.parsed_grants(),
            key=self.key,
            now=now,
            expires_at=expires,
            created_by=caller.principal,
        )
        self.store.put_token(issued.record)
        self._audit("token_create", caller, issued.record.id, {"principal": request.name, "grants": request.grants})
        return TokenIssued(**TokenPublic.of(issued.record).model_dump(), token=issued.token)

    def list(self, caller: Caller) -> list[TokenPublic]:
        self._check(caller)
        return [TokenPublic.of(record) for record in self.store.tokens()]

    def revoke(self, token_id: str, caller: Caller) -> TokenPublic:
        """Revoke a token; from the next request on it is refused. Raises ``TokenNotFoundError``."""
        self._check(caller)
        record = self.store.revoke_token(token_id, utcnow())
        self._audit("token_revoke", caller, token_id, {"principal": record.principal})
        return TokenPublic.of(record)

    def first_admin(self) -> TokenIssued | None:
        """On a team server's first start (no token at all): an admin token on ``*``; else None."""
        if self.store.tokens():
            return None
        request = TokenCreate(name=FIRST_ADMIN, grants=[str(Grant("*", Role.ADMIN))])
        return self.create(request, Caller(principal="server"))

    @staticmethod
    def whoami(caller: Caller) -> WhoAmI:
        access = caller.access
        if access is None:
            return WhoAmI(principal=caller.principal, grants=["*:admin"], personal_scope=None, manages_tokens=True)
        return WhoAmI(
            principal=access.principal,
            grants=[str(g) for g in access.grants],
            personal_scope=access.home,
            manages_tokens=access.manages_tokens,
        )
