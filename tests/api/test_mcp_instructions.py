"""The MCP server's instructions name the session's scope and the other scopes its caller may read,
with their memory counts, and stay short when there are many; over the SDK's real client, in memory
and over HTTP with a team token that reads only some scopes."""

from __future__ import annotations

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.mcp.instructions import INSTRUCTIONS, session_instructions
from api.mcp.server import SessionScope, build_mcp
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate
from hivemem.token_schemas import TokenCreate
from tests.api.test_team_acl import ServerThread

API, WEB, OPS = "github.com/acme/api", "github.com/acme/web", "github.com/acme/ops"


def fill(service: MemoryService) -> None:
    for scope, count in ((API, 3), ("", 2), (WEB, 1), (OPS, 4)):
        for n in range(count):
            note = MemoryCreate(
                title=f"Note {n} of {scope or 'global'}", content=f"Note {n}, kept in {scope}.", scope=scope
            )
            service.memorize(note, Caller(default_scope=API))


def test_a_session_is_told_its_scope_and_the_others_it_reads(settings: Settings) -> None:
    service = MemoryService.from_settings(settings)
    said: list[str | None] = []
    try:
        fill(service)

        async def main() -> None:
            async with Client(build_mcp(lambda: service, session=SessionScope(API))) as client:
                said.append(client.instructions)

        anyio.run(main)
    finally:
        service.close()
    assert said == [
        f"{INSTRUCTIONS} This session works in `{API}` (3 memories). Other scopes you may read (pass `scope` "
        f"to `remember`): `global` (2 memories), `{OPS}` (4 memories), `{WEB}` (1 memory)."
    ]


def test_many_scopes_are_cut_saying_how_many_are_left_out() -> None:
    counts = {f"github.com/acme/s{n:02d}": n + 1 for n in range(20)}
    text = session_instructions(None, counts)
    assert "This session works in" not in text and text.endswith(", and 14 more.")
    assert "`github.com/acme/s19` (20 memories)" in text and "s00" not in text  # the largest first
    assert len(text) < len(INSTRUCTIONS) + 400


def test_a_team_token_is_told_only_the_scopes_it_may_read(settings: Settings) -> None:
    team = settings.model_copy(update={"team": True, "rate_limit_per_min": 0})
    service = MemoryService.from_settings(team)
    said: list[str | None] = []
    try:
        fill(service)
        reader = service.tokens.create(TokenCreate(name="rita", grants=[f"{API}:read", f"{WEB}:read"]), Caller()).token
        with ServerThread(service) as server:

            async def main() -> None:
                headers = {"Authorization": f"Bearer {reader}", "X-Hivemem-Scope": WEB}
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
                ):
                    said.append(client.instructions)

            anyio.run(main)
    finally:
        service.close()
    (text,) = said
    assert text is not None and f"This session works in `{WEB}` (1 memory)." in text
    assert f"`{API}` (3 memories)" in text and OPS not in text and "`global`" not in text
