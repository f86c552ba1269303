"""The dashboard's files as the gateway serves them: a public shell with a strict Content-Security-
Policy, scripts and styles from this server only (nothing from a CDN), and no data without a token
on a team server. What the page does is tested in a real browser (tests/e2e/test_dashboard.py)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from api.main import create_app
from api.services.memories import MemoryService
from hivemem.config import Settings
from tests.api.conftest import LOCAL_URL

STATIC = Path(__file__).resolve().parents[2] / "api" / "http" / "ui" / "static"


def test_the_page_and_every_file_it_loads_come_from_this_server(client: TestClient) -> None:
    page = client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert client.get("/ui/", follow_redirects=False).headers["location"] == "/ui"

    loaded = re.findall(r'(?:src|href)="([^"#]+)"', page.text)
    scripts = sorted(STATIC.rglob("*.js"))
    imported = [
        (script.parent / target).resolve().relative_to(STATIC).as_posix()
        for script in scripts
        for target in re.findall(r'from "(\.[^"]+)"', script.read_text())
    ]
    assert imported, "the scripts import one another"
    for path in [*loaded, *(f"/ui/static/{name}" for name in imported)]:
        if path.startswith("data:"):
            continue
        assert path.startswith("/ui/static/"), path  # no CDN, no other host
        answer = client.get(path)
        assert answer.status_code == 200, path
    assert (
        client.get("/ui/static/app.js")
        .headers["content-type"]
        .startswith(("text/javascript", "application/javascript"))
    )
    for script in scripts:
        # Text goes in as text: nothing the server sends is parsed as markup.
        assert "innerHTML" not in script.read_text() and "insertAdjacentHTML" not in script.read_text(), script


def test_on_a_team_server_the_shell_is_public_and_the_data_is_not(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    try:
        with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
            assert client.get("/ui").status_code == 200
            assert client.get("/ui/static/views/memory.js").status_code == 200
            assert client.get("/v1/whoami").status_code == 401
            assert client.get("/v1/scopes").status_code == 401
            assert client.get("/ui/static/missing.js").status_code == 404
    finally:
        service.close()
