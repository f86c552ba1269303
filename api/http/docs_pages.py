"""Swagger UI and ReDoc served from files installed with hivemem (the ``fastapi-offline`` package),
so the API's pages work offline and load nothing from a CDN."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse

__all__ = ["DOCS_STATIC", "install_docs"]

DOCS_STATIC = "/docs/static"
_FILES = Path(fastapi_offline.__file__).parent / "static"


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs`` (Swagger UI), ``/redoc`` and their scripts under ``/docs/static``. The app
    must be built with ``docs_url=None, redoc_url=None``."""
    app.mount(DOCS_STATIC, StaticFiles(directory=_FILES), name="docs-static")

    def root(request: Request) -> str:
        return str(request.scope.get("root_path", ""))

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        base = root(request)
        return get_swagger_ui_html(
            openapi_url=f"{base}/openapi.json",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{base}/docs/oauth2-redirect",
            swagger_js_url=f"{base}{DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{base}{DOCS_STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{base}{DOCS_STATIC}/favicon.png",
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        base = root(request)
        return get_redoc_html(
            openapi_url=f"{base}/openapi.json",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{base}{DOCS_STATIC}/redoc.standalone.js",
            redoc_favicon_url=f"{base}{DOCS_STATIC}/favicon.png",
            with_google_fonts=False,
        )
