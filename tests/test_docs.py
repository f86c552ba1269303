"""The docs are true: docs/settings.md is the settings class, docs/rest.md names every route and
docs/mcp.md every MCP tool, the README stays short and reaches every page, and CI runs the
README's test command."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from fastapi.routing import APIRoute
from mcp import Client

from api.main import create_app
from api.mcp.server import build_mcp
from hivemem.config import Settings

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_settings_page_is_the_settings_class() -> None:
    from tests.settings_page import page

    assert _page("settings.md") == page(), "docs/settings.md is stale: python -m tests.settings_page --write"
    assert all(f"`HIVEMEM_{name.upper()}`" in _page("settings.md") for name in Settings.model_fields)
    from api.settings_catalogue import TUNING_GROUPS

    tuning = [name for group in TUNING_GROUPS for name in group.model_fields]
    assert all(f"`HIVEMEM_{name.upper()}`" in _page("settings.md") for name in tuning)


def test_every_route_is_documented() -> None:
    app = create_app(Settings(embed_model="hash:8"))
    paths = {route.path for route in app.routes if isinstance(route, APIRoute)}
    paths -= {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
    pages = "".join(page.read_text(encoding="utf-8") for page in DOCS.glob("*.md"))
    missing = [p for p in sorted(paths) if p not in pages]
    assert missing == []


def test_every_mcp_tool_is_documented() -> None:
    async def names() -> list[str]:
        async with Client(build_mcp(lambda: None)) as client:  # type: ignore[arg-type,return-value]
            return [tool.name for tool in (await client.list_tools()).tools]

    tools = asyncio.run(names())
    assert tools
    assert [t for t in tools if f"`{t}`" not in _page("mcp.md")] == []


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"\*\*Run the whole test suite\*\*.*?```console\n\$ (.+?)\n", README, re.S)
    assert command is not None
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == command.group(1)


def test_the_readme_is_short_and_reaches_every_page() -> None:
    assert README.count("\n") <= 300
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)\)", README))
    assert linked == {page.name for page in DOCS.glob("*.md")}


def test_links_between_the_pages_lead_somewhere() -> None:
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)(?:#([\w-]+))?\)", text):
            path = page if not target else (page.parent / target).resolve()
            assert path.exists(), (page.name, target)
            if anchor and path.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M)
                slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
                assert anchor in slugs or path.parent.name == "bench", (page.name, target, anchor)
