"""FastAPI dependencies: the service, the caller of a request, and checks every request passes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from api.http.denials import denial_recorder
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.access import Access
from hivemem.errors import ValidationError
from hivemem.model import GLOBAL_SCOPE
from hivemem.schemas import ScopeName
from hivemem.scope import SCOPE_HEADER

__all__ = ["CallerDep", "ServiceDep", "no_repeated_query_parameters"]


def get_service(request: Request) -> MemoryService:
    """The service the app's lifespan opened."""
    service: MemoryService = request.app.state.service
    return service


def get_caller(
    request: Request,
    scope: Annotated[
        ScopeName | None,
        Header(
            alias=SCOPE_HEADER,
            description="The caller's project scope, used when a call names none (default: global).",
        ),
    ] = None,
) -> Caller:
    """The caller of this request: its token's principal and grants (:mod:`api.http.auth`), or, with no
    token needed, the trusted ``local``. A caller that names no scope, in the call or in the
    ``X-Hivemem-Scope`` header, works in its personal scope, or the global one for ``local``."""
    access: Access | None = getattr(request.state, "access", None)
    if access is not None:
        route = request.scope.get("route")
        target = f"{request.method} {getattr(route, 'path', request.url.path)}"
        return Caller.of(access, scope=scope, on_denied=denial_recorder(get_service(request).store, target))
    return Caller(principal="local", default_scope=GLOBAL_SCOPE if scope is None else scope)


def no_repeated_query_parameters(request: Request) -> None:
    """Refuse a query string that names one parameter twice (``?limit=abc&limit=5``): which one
    counts would be a guess, and no parameter here takes a list."""
    keys = [key for key, _ in request.query_params.multi_items()]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValidationError(f"query parameter {repeated[0]!r} is given more than once", field=repeated[0])


ServiceDep = Annotated[MemoryService, Depends(get_service)]
CallerDep = Annotated[Caller, Depends(get_caller)]
