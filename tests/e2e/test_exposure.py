"""A real ``hivemem serve`` as a hostile page, a careless operator and a team's MCP clients see it.

DNS rebinding and cross-site requests against REST and /mcp, on loopback and on a public bind;
the project an MCP client names once in its configuration; the broker warning; and SIGTERM,
which must end every process cleanly.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.helpers import HivememServer, hivemem_command, hivemem_env, open_test_store, run_cli

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
NOTE = {"title": "Deploy key location", "content": "The deploy key lives in the team vault, never in git."}


def probe(server: HivememServer, headers: dict[str, str]) -> dict[str, int]:
    """The status of a REST recall and of an MCP initialize, each sent with ``headers``."""
    with httpx.Client(base_url=server.url, timeout=10) as http:
        rest = http.post("/v1/remember", json={"query": "deploy key"}, headers=headers)
        mcp = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS | headers)
    return {"rest": rest.status_code, "mcp": mcp.status_code}


# -- DNS rebinding and cross-site requests --------------------------------------------------------


def test_a_loopback_server_answers_only_its_own_names(server: HivememServer) -> None:
    port = server.port
    assert probe(server, {}) == {"rest": 200, "mcp": 200}
    assert probe(server, {"Host": f"localhost:{port}"}) == {"rest": 200, "mcp": 200}
    # A page on evil.example that rebinds its name to 127.0.0.1 still sends its own Host.
    assert probe(server, {"Host": f"evil.example:{port}"}) == {"rest": 421, "mcp": 421}
    assert probe(server, {"Origin": "http://evil.example"}) == {"rest": 403, "mcp": 403}
    assert probe(server, {"Origin": f"http://127.0.0.1:{port}"}) == {"rest": 200, "mcp": 200}


def test_a_public_bind_answers_its_configured_name_and_still_refuses_others(dirs: tuple[Path, Path]) -> None:
    public = HivememServer(
        *dirs,
        host="0.0.0.0",
        HIVEMEM_ALLOW_UNAUTHENTICATED_NETWORK="true",
        HIVEMEM_ALLOWED_HOSTS="memory.example.com",
        HIVEMEM_CORS_ORIGINS="https://app.example.com",
    )
    public.start()
    try:
        assert probe(public, {"Host": "memory.example.com"}) == {"rest": 200, "mcp": 200}
        assert probe(public, {"Host": f"127.0.0.1:{public.port}"}) == {"rest": 200, "mcp": 200}
        assert probe(public, {"Host": "evil.example"}) == {"rest": 421, "mcp": 421}
        assert probe(public, {"Host": "memory.example.com", "Origin": "https://evil.example"}) == {
            "rest": 403,
            "mcp": 403,
        }
        assert probe(public, {"Host": "memory.example.com", "Origin": "https://app.example.com"}) == {
            "rest": 200,
            "mcp": 200,
        }
    finally:
        public.stop()


def test_a_public_bind_without_its_host_names_is_refused_at_start(dirs: tuple[Path, Path]) -> None:
    data_dir, _ = dirs
    done = run_cli(
        "serve", "--host", "0.0.0.0", data_dir=data_dir, cwd=data_dir, HIVEMEM_ALLOW_UNAUTHENTICATED_NETWORK="true"
    )
    assert done.returncode == 2
    assert "HIVEMEM_ALLOWED_HOSTS" in done.stderr


# -- MCP over HTTP: the project is named once, in the client's configuration -----------------------


def test_mcp_over_http_names_its_project_in_a_header_or_the_path(server: HivememServer) -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        for how, url, headers in (
            ("header", f"{server.url}/mcp", {"X-Hivemem-Scope": "github.com/acme/api"}),
            ("path", f"{server.url}/mcp/github.com/acme/web", {}),
            ("none", f"{server.url}/mcp", {}),
        ):
            # The client's own HTTP client carries the header, as `claude mcp add --header` configures it.
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                tools = {t.name: t for t in (await client.list_tools()).tools}
                seen[how] = {
                    "description": tools["memorize"].description,
                    "has_scope": "scope" in tools["memorize"].input_schema["properties"],
                    "stored": await client.call_tool("memorize", NOTE),
                    "elsewhere": await client.call_tool("memorize", NOTE | {"scope": "github.com/acme/other"}),
                }

    anyio.run(main)
    for how, scope in (("header", "github.com/acme/api"), ("path", "github.com/acme/web")):
        assert f"works in project scope `{scope}`" in seen[how]["description"]
        assert seen[how]["has_scope"] is False
        assert seen[how]["stored"].structured_content["scope"] == scope
        assert seen[how]["elsewhere"].is_error  # locked to its project
    assert "names no project" in seen["none"]["description"]
    assert seen["none"]["has_scope"] is True
    assert seen["none"]["stored"].is_error and "names no project" in seen["none"]["stored"].content[0].text
    assert seen["none"]["elsewhere"].structured_content["scope"] == "github.com/acme/other"
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.post("/v1/remember", json={"query": "deploy key"}).json()["results"] == []  # nothing in global
        bad = http.post("/mcp/..%2Fetc", json=INITIALIZE, headers=MCP_HEADERS)
        assert (bad.status_code, bad.json()["error"]) == (422, "validation_error")
        two = http.post("/mcp/acme/a", json=INITIALIZE, headers=MCP_HEADERS | {"X-Hivemem-Scope": "acme/b"})
        assert two.status_code == 422


# -- the broker's durability ------------------------------------------------------------------------


def test_serve_warns_when_the_broker_keeps_nothing_across_a_restart(redis_url: str, dirs: tuple[Path, Path]) -> None:
    server = HivememServer(*dirs, HIVEMEM_BROKER_URL=redis_url)  # the test Redis has no AOF, no RDB
    server.start()
    try:
        assert "keeps nothing across a restart" in server.log_text()
        assert "--appendonly yes --appendfsync everysec" in server.log_text()
        # and, the test's hash embedder having no bands of its own, that deduplication reads MiniLM's
        assert "hash-64 has no measured cosine bands" in server.log_text()
    finally:
        server.stop()


# -- SIGTERM ends every process cleanly -------------------------------------------------------------


def test_sigterm_stops_serve_after_its_queued_writes(dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    server = HivememServer(data_dir, logs)
    server.start()
    with httpx.Client(base_url=server.url, timeout=10) as http:
        memory_id = http.post("/v1/memories", json=NOTE).json()["id"]
        assert http.post("/v1/remember", json={"query": "deploy key vault"}).json()["results"][0]["id"] == memory_id
        assert http.get(f"/v1/memories/{memory_id}").status_code == 200  # read by id: a use, reinforced later
    assert server.stop() == 0, server.log_text()  # SIGTERM
    assert not (data_dir / "hivemem.db-wal").exists()  # the store was closed: WAL checkpointed
    assert "Traceback" not in server.log_text()
    store = open_test_store(data_dir)
    try:
        assert store.get(memory_id).access_count == 1  # the read's reinforcement was written first
    finally:
        store.close()


def test_sigterm_stops_the_stdio_server_cleanly(dirs: tuple[Path, Path]) -> None:
    data_dir, _ = dirs
    command, *prefix = hivemem_command()
    parameters = StdioServerParameters(command=command, args=[*prefix, "mcp"], env=hivemem_env(data_dir), cwd=data_dir)
    stored: dict[str, Any] = {}

    async def main() -> None:
        async with Client(parameters) as client:
            stored.update((await client.call_tool("memorize", NOTE)).structured_content or {})

    anyio.run(main)  # leaves the store with a memory; now a session that is stopped by SIGTERM
    process = subprocess.Popen(
        [command, *prefix, "mcp"], env=hivemem_env(data_dir), cwd=data_dir,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    process.stdin.flush()
    assert b'"serverInfo"' in process.stdout.readline()  # it is serving (and holds the store open)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()
    assert stored["id"]
    assert not (data_dir / "hivemem.db-wal").exists()
