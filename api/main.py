"""The FastAPI app: REST under /v1, health, and the MCP server (streamable HTTP) at /mcp."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI
from mcp.server.transport_security import TransportSecuritySettings

from api.errors import install_handlers
from api.mcp_server import build_mcp
from api.routes import health, jobs, memories
from api.service import MemoryService
from hivemem.config import LOOPBACK_HOSTS, Settings, redact_url

__all__ = ["create_app", "serve"]


def _transport_security(host: str) -> TransportSecuritySettings:
    # DNS-rebinding protection: only Host/Origin headers naming the bound address are accepted.
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    if host not in LOOPBACK_HOSTS and host not in ("0.0.0.0", "::"):
        hosts.append(f"{host}:*")
    if host in ("0.0.0.0", "::"):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        allowed_hosts=hosts, allowed_origins=[f"http://{h}" for h in hosts] + [f"https://{h}" for h in hosts]
    )


def create_app(settings: Settings | None = None, service: MemoryService | None = None) -> FastAPI:
    """Build the app. The lifespan opens the service (unless one is given) and runs MCP sessions."""
    settings = settings or Settings()
    holder: dict[str, MemoryService] = {}
    mcp = build_mcp(lambda: holder["service"])
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp", transport_security=_transport_security(settings.host), host=settings.host
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = service
        if opened is None:
            # Opened here, closed here; load the model now so /readyz means ready.
            opened = await anyio.to_thread.run_sync(MemoryService.from_settings, settings)
            await anyio.to_thread.run_sync(opened.warm_up)
        holder["service"] = opened
        app.state.service = opened
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            if service is None:
                opened.close()

    app = FastAPI(
        title="hivemem",
        version="0.1.0",
        summary="Team-shared long-term memory for AI agents.",
        lifespan=lifespan,
    )
    install_handlers(app)
    app.include_router(memories.router)
    app.include_router(jobs.router)
    app.include_router(health.router)
    # Mounted last: FastAPI's own routes match first, everything else falls to the MCP app (/mcp).
    app.mount("/", mcp_app)
    return app


def serve(settings: Settings, *, host: str | None = None, port: int | None = None) -> None:
    """Open the store, then run the app with uvicorn on ``host:port`` (defaults from settings).

    The service is opened before the server starts, so a bad store or model fails here with one
    clear error instead of inside the server's startup.
    """
    import uvicorn

    overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    # Validate again: --host must pass the same safety check as HIVEMEM_HOST.
    settings = Settings.model_validate(settings.model_dump() | overrides)
    service = MemoryService.from_settings(settings)
    try:
        service.warm_up()
        jobs = f"on Celery workers via {redact_url(settings.broker_url)}" if settings.broker_url else "in-process"
        print(
            f"hivemem serving on http://{settings.host}:{settings.port} (REST /v1, MCP /mcp), "
            f"store {redact_url(settings.resolved_store_url())}, jobs {jobs}",
            flush=True,
        )
        uvicorn.run(create_app(settings, service), host=settings.host, port=settings.port, log_level=settings.log_level)
    finally:
        service.close()
