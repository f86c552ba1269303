"""The README documents every setting, route and MCP tool, and CI runs the README's test command."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from fastapi.routing import APIRoute
from mcp import Client

from api.main import create_app
from api.mcp_server import build_mcp
from hivemem.config import Settings

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented() -> None:
    missing = [name for name in Settings.model_fields if f"`HIVEMEM_{name.upper()}`" not in README]
    assert missing == []


def test_every_route_is_documented() -> None:
    app = create_app(Settings(embed_model="hash:8"))
    paths = {route.path for route in app.routes if isinstance(route, APIRoute)}
    paths -= {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
    missing = [p for p in sorted(paths) if p not in README]
    assert missing == []


def test_every_mcp_tool_is_documented() -> None:
    async def names() -> list[str]:
        async with Client(build_mcp(lambda: None)) as client:  # type: ignore[arg-type,return-value]
            return [tool.name for tool in (await client.list_tools()).tools]

    tools = asyncio.run(names())
    assert tools
    assert [t for t in tools if f"`{t}`" not in README] == []


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"\*\*Run the whole test suite\*\*.*?```console\n\$ (.+?)\n", README, re.S)
    assert command is not None
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == command.group(1)
