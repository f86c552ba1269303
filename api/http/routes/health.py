"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.http.deps import ServiceDep
from hivemem.config import store_fingerprint

__all__ = ["router"]

router = APIRouter(tags=["health"])

# Without workers the gateway still serves recall and queues memorize (answering 202), so missing
# workers degrade it without taking it out of a load balancer; the other checks are required.
OPTIONAL_CHECKS = frozenset({"workers"})


@router.get("/healthz")
def healthz(service: ServiceDep) -> dict[str, str]:
    """The process is up; `store` tells which store it serves (a fingerprint, nothing of its path:
    the CLI goes through this server only when it is its own store)."""
    return {"status": "ok", "store": store_fingerprint(service.settings.resolved_store_url())}


@router.get("/readyz")
def readyz(service: ServiceDep) -> JSONResponse:
    """Every dependency, by name: store, embedder and, with a broker, broker and workers.

    200 `ready` when all answer; 200 `degraded` when only the workers are missing (memorize then
    queues and answers 202); 503 `unavailable` with the failing checks otherwise.
    """
    checks = service.parts.ready()
    failing = {name for name, ok in checks.items() if not ok}
    if not failing:
        status, code = "ready", 200
    elif failing <= OPTIONAL_CHECKS:
        status, code = "degraded", 200
    else:
        status, code = "unavailable", 503
    return JSONResponse({"status": status, "checks": checks}, status_code=code)
