"""The token interface's requests and answers, shared by REST and the CLI. No answer but the one
that creates a token ever holds the token."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictStr

from hivemem.access import GRANT_PATTERN, MAX_GRANT_LENGTH, NAME_PATTERN, Grant, personal_scope, validate_principal_name
from hivemem.tokens import TokenRecord

__all__ = ["MAX_GRANTS", "TokenCreate", "TokenIssued", "TokenPublic", "WhoAmI"]

MAX_GRANTS = 50


def _grant(text: str) -> str:
    return str(Grant.parse(text))


PrincipalName = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=64,
        pattern=NAME_PATTERN,
        description="Who the token is for: lower-case letters, digits, . _ -",
    ),
    AfterValidator(validate_principal_name),
]
GrantText = Annotated[
    StrictStr,
    Field(
        min_length=3,
        max_length=MAX_GRANT_LENGTH,
        # Grant.parse's rule in JSON Schema, so that a schema-valid grant is a valid one. Not
        # `pattern=`: pydantic's regex engine has no lookahead; Grant.parse checks it in Python.
        json_schema_extra={"pattern": GRANT_PATTERN},
        description="PATTERN:ROLE, e.g. `github.com/acme/*:write`; `(global)` names the global scope, "
        "`*` every scope; roles read, write, admin.",
    ),
    AfterValidator(_grant),
]


class TokenCreate(BaseModel):
    """A new token for ``name`` with ``grants`` (besides admin on its personal scope ``user/<name>``)."""

    model_config = ConfigDict(extra="forbid")

    name: PrincipalName
    grants: list[GrantText] = Field(default_factory=list, max_length=MAX_GRANTS)
    expires_in_days: Annotated[StrictFloat, Field(gt=0, le=3650)] | None = Field(
        default=None, description="Days until the token stops working; none: it works until revoked."
    )

    def parsed_grants(self) -> tuple[Grant, ...]:
        return tuple(dict.fromkeys(Grant.parse(text) for text in self.grants))


class TokenPublic(BaseModel):
    """A token's record as admins see it: never the token, nor its hash."""

    id: str
    principal: str
    personal_scope: str
    grants: list[str]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    created_by: str

    @classmethod
    def of(cls, record: TokenRecord) -> TokenPublic:
        return cls(
            id=record.id,
            principal=record.principal,
            personal_scope=personal_scope(record.principal),
            grants=[str(g) for g in record.grants],
            created_at=record.created_at,
            expires_at=record.expires_at,
            revoked_at=record.revoked_at,
            created_by=record.created_by,
        )


class TokenIssued(TokenPublic):
    """A new token's record and the token itself: shown this once, kept nowhere."""

    token: str


class WhoAmI(BaseModel):
    """The caller of a request: its principal, grants and the scope it works in when it names none."""

    principal: str
    grants: list[str]
    personal_scope: str | None
    manages_tokens: bool
