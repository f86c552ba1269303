"""What a client sees of hivemem, as data: the OpenAPI document, the MCP tools, the CLI's commands.

``tests/test_public_surface.py`` compares them with the copies kept in ``tests/surface/``, so a
change of the code's shape that changes what a client sees fails a test. When a change of the
surface is meant, write the copies again and commit them with it::

    python -m tests.public_surface --write
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

KEPT = Path(__file__).parent / "surface"


def openapi_document() -> dict[str, Any]:
    """The REST API's OpenAPI document, as a server on default settings serves it."""
    from api.main import create_app
    from hivemem.config import Settings

    document: dict[str, Any] = create_app(Settings(embed_model="hash:8")).openapi()
    return document


def mcp_tools() -> list[dict[str, Any]]:
    """Every MCP tool as a client lists it: name, description, schemas, annotations."""
    from mcp import Client

    from api.mcp.server import build_mcp

    async def listed() -> list[dict[str, Any]]:
        async with Client(build_mcp(lambda: None)) as client:  # type: ignore[arg-type,return-value]
            tools = (await client.list_tools()).tools
        return [tool.model_dump(mode="json", exclude_none=True) for tool in sorted(tools, key=lambda t: t.name)]

    return asyncio.run(listed())


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> dict[str, Any]:
    options: list[str] = []
    found: dict[str, Any] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _commands(sub, (*path, name))
        elif action.option_strings:
            options.extend(action.option_strings)
        elif action.dest != "help":
            options.append(f"<{action.dest}>")
    found[" ".join(path) or "hivemem"] = sorted(options)
    return found


def cli_commands() -> dict[str, list[str]]:
    """Every command and subcommand the CLI accepts (aliases included), with its options and arguments."""
    from api.cli.app import _parser

    return dict(sorted(_commands(_parser(), ()).items()))


SURFACES = {"openapi.json": openapi_document, "mcp_tools.json": mcp_tools, "cli_commands.json": cli_commands}


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__, file=sys.stderr)
        return 2
    KEPT.mkdir(exist_ok=True)
    for name, read in SURFACES.items():
        (KEPT / name).write_text(json.dumps(read(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {KEPT / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
