"""Tokens for admins (create, list, revoke) and, for any caller, who the server takes it for."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.http.deps import CallerDep, ServiceDep
from hivemem.token_schemas import TokenCreate, TokenIssued, TokenPublic, WhoAmI

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["tokens"])

TokenId = Annotated[str, Path(pattern=r"^[0-9a-f]{12}$", description="The token's id (the 12 hex after `hm_`).")]


@router.post("/tokens", response_model=TokenIssued, status_code=201)
def create_token(request: TokenCreate, service: ServiceDep, caller: CallerDep) -> TokenIssued:
    """A new token for a principal with its grants (admins on `*` only). The answer holds the token:
    it is shown this once and stored only as a keyed hash."""
    return service.tokens.create(request, caller)


@router.get("/tokens", response_model=list[TokenPublic])
def list_tokens(service: ServiceDep, caller: CallerDep) -> list[TokenPublic]:
    """Every token's record, revoked and expired ones included, oldest first (admins on `*` only)."""
    return service.tokens.list(caller)


@router.delete("/tokens/{token_id}", response_model=TokenPublic)
def revoke_token(token_id: TokenId, service: ServiceDep, caller: CallerDep) -> TokenPublic:
    """Revoke a token: refused from the next request on (admins on `*` only)."""
    return service.tokens.revoke(token_id, caller)


@router.get("/whoami", response_model=WhoAmI)
def whoami(service: ServiceDep, caller: CallerDep) -> WhoAmI:
    """The caller as the server sees it: principal, grants, personal scope."""
    return service.tokens.whoami(caller)
