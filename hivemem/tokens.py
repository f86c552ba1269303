"""Bearer tokens: made random, shown once, stored only as a keyed hash, checked in constant time.

A token reads ``hm_<id>_<secret>``: the ``hm_`` prefix lets a secret scanner (or a person) recognise
a leaked one; ``<id>`` (12 hex characters) names its record, so a check reads one record instead of
hashing against all of them; ``<secret>`` is 32 random bytes. The store keeps the id and an
HMAC-SHA256 of the whole token under the server's key, never the token: a copy of the store alone
cannot be used to call the server, and a 256-bit secret cannot be guessed from its hash. A slow
hash would add nothing against guessing here and cost every request milliseconds.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime

from hivemem.access import Access, Grant

__all__ = ["TOKEN_PREFIX", "IssuedToken", "TokenRecord", "issue_token", "token_digest", "token_id_of"]

TOKEN_PREFIX = "hm_"
_TOKEN = re.compile(r"hm_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")


def token_digest(token: str, key: bytes) -> str:
    """The keyed hash the store keeps for ``token``."""
    return hmac.new(key, token.encode("utf-8"), hashlib.sha256).hexdigest()


def token_id_of(token: str) -> str | None:
    """The record id a well-formed token names, or None for anything else."""
    match = _TOKEN.fullmatch(token)
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """What the store keeps of a token: who it is, what it may do, when it ends. No secret."""

    id: str
    principal: str
    grants: tuple[Grant, ...]
    digest: str
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    created_by: str = field(default="")

    def matches(self, token: str, key: bytes) -> bool:
        """Whether ``token`` is this record's (constant time in the token's content)."""
        return hmac.compare_digest(self.digest, token_digest(token, key))

    def live(self, now: datetime) -> bool:
        """Neither revoked nor expired at ``now``."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def revoked(self, at: datetime) -> TokenRecord:
        return replace(self, revoked_at=at)

    @property
    def access(self) -> Access:
        """What a request carrying this token may do."""
        return Access(self.principal, self.grants)


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A new token: its record, and the token itself, which is shown once and kept nowhere."""

    record: TokenRecord
    token: str


def issue_token(
    principal: str,
    grants: tuple[Grant, ...],
    *,
    key: bytes,
    now: datetime,
    expires_at: datetime | None = None,
    created_by: str = "",
) -> IssuedToken:
    """A new random token for ``principal`` and the record that stores it."""
    token_id = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    record = TokenRecord(
        id=token_id,
        principal=principal,
        grants=grants,
        digest=token_digest(token, key),
        created_at=now,
        expires_at=expires_at,
        created_by=created_by,
    )
    return IssuedToken(record, token)
