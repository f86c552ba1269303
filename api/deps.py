"""FastAPI dependencies: the service and the caller of a request."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.service import Caller, MemoryService

__all__ = ["CallerDep", "ServiceDep"]


def get_service(request: Request) -> MemoryService:
    """The service the app's lifespan opened."""
    service: MemoryService = request.app.state.service
    return service


def get_caller(request: Request) -> Caller:
    """The caller of this request. Without auth (loopback only) everyone is ``local``; an
    HTTP caller that names no scope works in the global scope."""
    return Caller(principal="local")


ServiceDep = Annotated[MemoryService, Depends(get_service)]
CallerDep = Annotated[Caller, Depends(get_caller)]
