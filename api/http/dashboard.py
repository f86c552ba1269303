"""The web dashboard at ``/ui``: static files served by the gateway itself (no build step, no CDN).

The page is a shell that holds no data: its scripts call the same REST API as any client, with the
same rules (on a team server, a token the user pastes in, kept in the tab's session storage only).
So the shell and its files are public, like ``/docs``; every request for data is authenticated. A
strict Content-Security-Policy lets the page load only its own files and talk only to this server,
and the scripts put text into the page as text, never as markup.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.responses import FileResponse, RedirectResponse

__all__ = ["UI_PATH", "UI_STATIC", "install_dashboard"]

UI_PATH = "/ui"
UI_STATIC = "/ui/static"
_FILES = Path(__file__).parent / "ui" / "static"
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The shell is small and changes with the package: always asked for again.
    "Cache-Control": "no-cache",
}


def install_dashboard(app: FastAPI) -> None:
    """Serve the dashboard's page at ``/ui`` and its scripts and styles under ``/ui/static``."""
    app.mount(UI_STATIC, StaticFiles(directory=_FILES), name="ui-static")

    @app.get(UI_PATH, include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(_FILES / "index.html", media_type="text/html", headers=_SECURITY_HEADERS)

    @app.get(UI_PATH + "/", include_in_schema=False)
    async def dashboard_slash() -> RedirectResponse:
        return RedirectResponse(UI_PATH)
