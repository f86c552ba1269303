"""The FastAPI app: REST under /v1, health, and the MCP server (streamable HTTP) at /mcp."""

from __future__ import annotations

import errno
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from fastapi import Depends, FastAPI
from mcp.server import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

import hivemem
from api.errors import ERROR_RESPONSES, install_handlers
from api.http.auth import METADATA_PATH, Authenticator, AuthGate, protected_resource_metadata
from api.http.dashboard import install_dashboard
from api.http.deps import no_repeated_query_parameters
from api.http.docs_pages import install_docs
from api.http.guard import RequestGuard
from api.http.metrics import CONTENT_TYPE, Metrics, MetricsMiddleware
from api.http.routes import health, jobs, knowledge, memories, operators, tokens, transfer
from api.mcp.endpoint import ProjectEndpoint
from api.mcp.server import build_mcp
from api.process.logs import configure_process_logging
from api.process.shutdown import stopping_on_signals
from api.process.tracing import TracingObserver, start_tracing, trace_app
from api.services.memories import MemoryService
from hivemem.config import Settings, redact_url
from hivemem.errors import ConfigError
from hivemem.scope import SCOPE_HEADER

if TYPE_CHECKING:
    import uvicorn

__all__ = ["announce_first_admin", "create_app", "serve"]

MCP_METHODS = ["GET", "POST", "DELETE"]


def create_app(settings: Settings | None = None, service: MemoryService | None = None) -> FastAPI:
    """Build the app. The lifespan opens the service (unless one is given) and runs MCP sessions."""
    settings = settings or Settings()
    holder: dict[str, MemoryService] = {}
    gate: dict[str, Authenticator] = {}
    metrics = Metrics() if settings.metrics else None
    mcp = build_mcp(lambda: holder["service"], on_tool_call=None if metrics is None else metrics.tool_call)
    # Called for its session manager; the routes are this app's own. Host and Origin checks are
    # the RequestGuard's, for every route alike, so the SDK's own copy of them is off.
    mcp.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.max_request_bytes,
        host=settings.host,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = service
        if opened is None:
            # Opened here, closed here; load the model now so /readyz means ready.
            opened = await anyio.to_thread.run_sync(MemoryService.from_settings, settings)
            await anyio.to_thread.run_sync(opened.parts.warm_up)
            opened.start_background()
        holder["service"] = opened
        if metrics is not None:
            metrics.watch(opened)
        if settings.otel_endpoint:
            opened.recaller.observer = TracingObserver(opened.recaller.observer)
        gate["authenticator"] = Authenticator(opened.store, opened.tokens.key, settings)
        # Learn now, while the store answers, whether tokens exist (see Authenticator._any_token).
        await anyio.to_thread.run_sync(gate["authenticator"].tokens_required, None)
        app.state.service = opened
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            if service is None:
                opened.close()

    app = FastAPI(
        title="hivemem",
        version=hivemem.__version__,
        summary="Team-shared long-term memory for AI agents.",
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
        dependencies=[Depends(no_repeated_query_parameters)],
        docs_url=None,
        redoc_url=None,
    )
    install_docs(app)
    install_dashboard(app)
    if settings.otel_endpoint:
        trace_app(app)
    install_handlers(app)
    _install_routes(app, mcp, metrics)
    _install_middleware(app, settings, metrics, authenticator=lambda: gate["authenticator"])
    return app


def _install_routes(app: FastAPI, mcp: MCPServer, metrics: Metrics | None) -> None:
    """REST routers, MCP over streamable HTTP (``/mcp`` and ``/mcp/PROJECT``), the OAuth resource
    metadata, and ``/metrics`` when metrics are on."""
    app.include_router(memories.router)
    app.include_router(knowledge.router)
    app.include_router(jobs.router)
    app.include_router(tokens.router)
    app.include_router(transfer.router)
    app.include_router(operators.router)
    app.include_router(health.router)
    endpoint = ProjectEndpoint(StreamableHTTPASGIApp(mcp.session_manager))
    app.router.routes.append(Route("/mcp", endpoint=endpoint, methods=MCP_METHODS))
    app.router.routes.append(Route("/mcp/{project:path}", endpoint=endpoint, methods=MCP_METHODS))

    async def resource_metadata(request: Request) -> JSONResponse:
        base = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
        return JSONResponse(protected_resource_metadata(base))

    app.router.routes.append(Route(METADATA_PATH, endpoint=resource_metadata, methods=["GET"]))
    app.router.routes.append(Route(METADATA_PATH + "/mcp", endpoint=resource_metadata, methods=["GET"]))
    if metrics is not None:
        watched = metrics

        async def metrics_page(_: Request) -> Response:
            # Scrape-time reads (the store's count) are blocking calls: off the event loop.
            body = await anyio.to_thread.run_sync(watched.render)
            return Response(body, media_type=CONTENT_TYPE)

        app.router.routes.append(Route("/metrics", endpoint=metrics_page, methods=["GET"]))


def _install_middleware(
    app: FastAPI, settings: Settings, metrics: Metrics | None, *, authenticator: Callable[[], Authenticator]
) -> None:
    """The layers every request passes, outermost last: the token gate, CORS, the Host/Origin
    guard, metrics, and the trusted proxies' forwarded headers."""
    # Innermost of the three: CORS answers preflights (which carry no token) before it.
    app.add_middleware(AuthGate, authenticator=authenticator, routes=lambda: app.routes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=[
                "content-type",
                "authorization",
                "mcp-session-id",
                "mcp-protocol-version",
                SCOPE_HEADER.lower(),
            ],
            expose_headers=["mcp-session-id"],
        )
    # Added last, so it runs first: nothing reaches a route (or CORS) from a foreign host or origin.
    app.add_middleware(RequestGuard, settings=settings)
    if metrics is not None:
        # Outside everything: requests the guard or the token gate refuse are counted too.
        app.add_middleware(MetricsMiddleware, metrics=metrics)
    if settings.trusted_proxies:
        # Outermost: the client address every layer sees (throttle, audit, loopback trust) is the
        # forwarded one only when the request came from a proxy the operator named.
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(settings.trusted_proxies))


def _new_store_note(service: MemoryService) -> str:
    """`` (new: …)`` after the store's URL when this start created it; else nothing."""
    if getattr(service.store, "created_now", False):
        return " (new: no database was there, so an empty one was created)"
    return ""


def server_config(app: FastAPI, settings: Settings, **options: Any) -> uvicorn.Config:
    """How uvicorn serves ``app``: without its own proxy-header handling, which trusts
    ``X-Forwarded-For`` from 127.0.0.1 by default; :func:`create_app` trusts ``trusted_proxies`` only."""
    import uvicorn

    options.setdefault("log_level", settings.log_level)
    return uvicorn.Config(app, host=settings.host, port=settings.port, proxy_headers=False, **options)


def announce_first_admin(service: MemoryService) -> None:
    """A team server's first start: create the admin token and print it, this once."""
    issued = service.tokens.first_admin()
    if issued is not None:
        print(
            f"team server: created the first admin token (principal {issued.principal!r}, grants *:admin). "
            f"It is shown this once; keep it secret:\n{issued.token}",
            flush=True,
        )


def _check_address_free(host: str, port: int) -> None:
    """Raise ``ConfigError`` when ``host:port`` cannot be bound now, before the model loads: the
    server would print that it serves, then fail. (Another process may still take the port before
    uvicorn binds it; uvicorn then says so itself.)"""
    if port == 0:
        return
    try:
        families = {info[0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
    except socket.gaierror as exc:
        raise ConfigError(f"host {host!r}: no such address ({exc.strerror})") from None
    for family in families:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise ConfigError(
                        f"{host}:{port} is in use (another hivemem serve?): stop it, or pick another port "
                        "with --port or HIVEMEM_PORT"
                    ) from None
                raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def serve(
    settings: Settings, *, host: str | None = None, port: int | None = None, started: float | None = None
) -> None:
    """Open the store, then run the app with uvicorn on ``host:port`` (defaults from settings).

    The service is opened before the server starts, so a bad store or model fails here with one
    clear error instead of inside the server's startup. Each step of the start says on stderr what
    it loaded and when, counted from ``started`` (``time.monotonic()`` when the command began).
    SIGTERM and SIGINT stop it gracefully: requests in flight finish, queued background writes are
    done, the store is closed.
    """
    began = time.monotonic() if started is None else started
    configure_process_logging(settings.log_level)

    def said(step: str) -> None:
        print(f"hivemem: {step} ({time.monotonic() - began:.1f} s)", file=sys.stderr, flush=True)

    import uvicorn

    overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    # Validate again: --host must pass the same safety check as HIVEMEM_HOST.
    settings = Settings.model_validate(settings.model_dump() | overrides)
    # First: the embedded shape's in-process jobs are traced from the start.
    start_tracing(settings, "gateway")
    _check_address_free(settings.host, settings.port)
    said("server loaded; opening the store and the model")
    service = MemoryService.from_settings(settings)
    try:
        said(f"store open, model {service.embedder.model_id} loaded; loading the store's index")
        service.parts.warm_up()
        said("index loaded")
        service.start_background()
        if settings.team:
            announce_first_admin(service)
        for warning in service.warnings():
            print(f"warning: {warning}", file=sys.stderr, flush=True)
        jobs = f"on Celery workers via {redact_url(settings.broker_url)}" if settings.broker_url else "in-process"
        print(
            f"hivemem serving on http://{settings.host}:{settings.port} (REST /v1, MCP /mcp), "
            f"store {redact_url(settings.resolved_store_url())}{_new_store_note(service)}, jobs {jobs}; "
            f"ready in {time.monotonic() - began:.1f} s",
            flush=True,
        )
        config = server_config(create_app(settings, service), settings)
        server = uvicorn.Server(config)

        def stop() -> None:
            server.should_exit = True

        with stopping_on_signals(stop):
            server.run()
    finally:
        service.close()
