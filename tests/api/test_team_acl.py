"""The team server's access matrix: three principals, four scopes, every verb, over REST and MCP HTTP.

A real server (uvicorn on a free port, in this process so it can run over any store) serves a
store seeded by an admin with one memory, one document and one forgotten memory per scope, each
carrying a marker word. Each principal then calls every verb in every scope, over real HTTP and
over the MCP SDK's streamable-HTTP client. Every call a principal's grants allow must succeed,
every other must be refused (403, or 404 where only an id was named), and no answer, allowed or
refused, may carry the marker or the id of a memory of a scope the principal may not read.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.main import create_app, server_config
from api.services.caller import Caller
from api.services.memories import MemoryService
from api.services.parts import Parts
from bench.suite.local_cluster import free_port
from hivemem.access import Grant, Role
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.knowledge_schemas import IngestRequest, KnowledgeStoreRequest
from hivemem.schemas import MemoryCreate
from hivemem.token_schemas import TokenCreate
from tests.opensearch_backend import OpenSearchBackend
from workers.documents.sources import FileAccess

SCOPES = {"personal": "user/alice", "acme": "github.com/acme/api", "beta": "github.com/beta/web", "global": ""}
GRANTS = {
    "alice": ["github.com/acme/*:write", "(global):read"],
    "bob": ["github.com/acme/*:read", "github.com/beta/*:admin"],
    "carol": ["github.com/beta/*:write"],
}
# What each principal holds in each scope, written out (not computed by the code under test).
ROLES: dict[str, dict[str, str | None]] = {
    "alice": {"personal": "admin", "acme": "write", "beta": None, "global": "read"},
    "bob": {"personal": None, "acme": "read", "beta": "admin", "global": None},
    "carol": {"personal": None, "acme": None, "beta": "write", "global": None},
}
RANK = {None: 0, "read": 1, "write": 2, "admin": 3}
NEEDS = {
    "memorize": "write",
    "remember": "read",
    "get": "read",
    "forget": "admin",
    "knowledge_search": "read",
    "knowledge_search_in": "read",
    "knowledge_sources": "read",  # within one indexed document: a reader searches it, nothing is indexed
    "knowledge_read": "read",
    "knowledge_match": "read",
    "knowledge_store": "write",
    "status": "read",
    "handoff_save": "write",
    "handoff_load": "read",
    "undo": "admin",
    "audit": "read",
    "export": "read",
    "import": "admin",
}
NEW_NOTE = {"title": "New finding", "content": "A new finding about the build."}
MCP_VERBS = ("memorize", "remember", "forget", "knowledge_search", "knowledge_search_in", "knowledge_read")
MCP_VERBS += ("knowledge_match", "knowledge_sources")
MCP_VERBS += ("knowledge_store", "status", "handoff_save", "handoff_load", "get", "audit", "undo", "export")


@dataclass
class Seeded:
    """What the admin put in each scope: a memory, a document, and an audit record (a forget)."""

    memory: dict[str, str] = field(default_factory=dict)
    audit: dict[str, str] = field(default_factory=dict)
    gone: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)


def marker(tag: str) -> str:
    return f"zq{tag}marker"


class ServerThread:
    """The app on uvicorn in a thread: real HTTP on a free port, over the service the test built."""

    def __init__(self, service: MemoryService) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = service.settings.model_copy(update={"port": self.port, "host": "127.0.0.1"})
        config = server_config(create_app(settings, service), settings, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 300
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(params=["sqlite", pytest.param("opensearch", marks=pytest.mark.opensearch)])
def team_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True, rate_limit_per_min=0)
    if request.param == "sqlite":
        service = MemoryService.from_settings(settings)
    else:
        backend: OpenSearchBackend = request.getfixturevalue("opensearch_backend")
        embedder = HashEmbedder(64)
        validator = request.getfixturevalue("spec_validator")
        store = backend.open(embedder, Settings(), validator, needs_knn=True)
        service = MemoryService(Parts(settings, store, embedder))
    try:
        yield service
    finally:
        service.close()


def seed(service: MemoryService) -> Seeded:
    admin = Caller(principal="admin")
    seeded = Seeded()
    for tag, scope in SCOPES.items():
        note = MemoryCreate(title=f"Note {tag}", content=f"The {marker(tag)} decision of this scope.", scope=scope)
        seeded.memory[tag] = service.memorize_many([note], admin)[0].id
        gone = MemoryCreate(title=f"Old {tag}", content=f"An outdated {tag} remark, forgotten.", scope=scope)
        gone_id = service.memorize_many([gone], admin)[0].id
        service.forget(gone_id, confirm=True, caller=admin, scope=scope)
        seeded.audit[tag] = next(e.id for e in service.store.audit_log(gone_id))
        seeded.gone[tag] = gone_id
        text = f"Design doc of {tag}: the k{marker(tag)} rule."
        service.knowledge.store_text(KnowledgeStoreRequest(key=f"doc-{tag}", text=text, scope=scope), admin)
    for name, grants in GRANTS.items():
        seeded.tokens[name] = service.tokens.create(TokenCreate(name=name, grants=grants), admin).token
    root = TokenCreate(name="root", grants=[str(Grant("*", Role.ADMIN))])
    seeded.tokens["root"] = service.tokens.create(root, admin).token
    return seeded


def fresh_memory(service: MemoryService, scope: str) -> str:
    """A memory written by the admin, for a forget to remove."""
    note = MemoryCreate(title="Scratch", content=f"A scratch note {time.monotonic_ns()}.", scope=scope)
    return service.memorize_many([note], Caller(principal="admin"))[0].id


def rest_call(http: httpx.Client, verb: str, tag: str, seeded: Seeded, service: MemoryService) -> httpx.Response:
    scope = SCOPES[tag]
    if verb == "memorize":
        return http.post("/v1/memories", json={**NEW_NOTE, "scope": scope})
    if verb == "remember":
        return http.post("/v1/remember", json={"query": f"{marker(tag)} decision", "scope": scope})
    if verb == "get":
        return http.get(f"/v1/memories/{seeded.memory[tag]}", params={"scope": scope})
    if verb == "forget":
        memory_id = fresh_memory(service, scope)
        return http.delete(f"/v1/memories/{memory_id}", params={"confirm": "true", "scope": scope})
    if verb == "knowledge_search":
        return http.post("/v1/knowledge/search", json={"query": "design doc rule", "scope": scope})
    if verb == "knowledge_search_in":
        within = {"query": "design doc rule", "source": f"key:doc-{tag}", "scope": scope}
        return http.post("/v1/knowledge/search", json=within)
    if verb == "knowledge_sources":
        return http.get("/v1/knowledge/sources", params={"scope": scope})
    if verb == "knowledge_read":
        return http.post("/v1/knowledge/read", json={"source": f"key:doc-{tag}", "scope": scope})
    if verb == "knowledge_match":
        return http.post("/v1/knowledge/match", json={"pattern": "k?zq[a-z]+marker", "scope": scope})
    if verb == "knowledge_store":
        return http.post("/v1/knowledge/store", json={"key": "notes", "text": "Some notes.", "scope": scope})
    if verb == "status":
        return http.get("/v1/status", params={"scope": scope})
    if verb == "handoff_save":
        return http.post("/v1/handoff", json={"summary": "Where the work stands.", "scope": scope})
    if verb == "handoff_load":
        return http.get("/v1/handoff", params={"scope": scope})
    if verb == "audit":
        return http.get("/v1/audit", params={"memory_id": seeded.gone[tag], "scope": scope})
    if verb == "export":
        return http.get("/v1/export", params={"scope": scope})
    if verb == "import":
        return http.post("/v1/import", content=import_file(scope), headers={"Content-Type": "application/x-ndjson"})
    assert verb == "undo"
    return http.post(f"/v1/audit/{seeded.audit[tag]}/undo")


def import_file(scope: str) -> str:
    """An export file holding one new memory of ``scope``."""
    now = "2026-12-01T00:00:00+00:00"
    content = f"An imported note {time.monotonic_ns()}."
    memory = {
        "kind": "memory", "id": str(uuid.uuid4()), "scope": scope, "title": "Imported", "content": content,
        "content_hash": content_hash(content), "memory_type": "fact", "importance": 0.5,
        "source": "agent_inferred", "tags": [], "related_files": [], "state": "working", "author": "someone",
        "created_at": now, "updated_at": now, "last_accessed_at": None, "access_count": 0, "valid_from": None,
        "valid_to": None, "details": {}, "thread": "",
    }  # fmt: skip
    header = {"kind": "header", "format": "hivemem-export", "version": 1}
    return "\n".join(json.dumps(line) for line in (header, memory)) + "\n"


def allowed(principal: str, verb: str, tag: str) -> bool:
    return RANK[ROLES[principal][tag]] >= RANK[NEEDS[verb]]


def unreadable_marks(principal: str, seeded: Seeded) -> list[str]:
    """What must never appear in this principal's answers: markers and memory ids of scopes it cannot read."""
    hidden = [tag for tag in SCOPES if ROLES[principal][tag] is None]
    return [m for tag in hidden for m in (marker(tag), seeded.memory[tag])]


def test_the_acl_matrix_over_rest(team_service: MemoryService) -> None:
    seeded = seed(team_service)
    calls = leaks = 0
    with ServerThread(team_service) as server:
        for principal in ROLES:
            auth = {"Authorization": f"Bearer {seeded.tokens[principal]}"}
            with httpx.Client(base_url=server.url, headers=auth, timeout=30) as http:
                for verb in NEEDS:
                    for tag in SCOPES:
                        answer = rest_call(http, verb, tag, seeded, team_service)
                        calls += 1
                        where = f"{principal} {verb} {tag}: {answer.status_code} {answer.text[:300]}"
                        if allowed(principal, verb, tag):
                            # An allowed undo reaches the record and is refused for what it is (a forget).
                            assert answer.status_code < 400 or (verb == "undo" and answer.status_code == 409), where
                        else:
                            assert answer.status_code in (403, 404), where
                        leaks += sum(mark in answer.text for mark in unreadable_marks(principal, seeded))
                # An id of a scope it cannot read: the same 404 as an unknown id, with no scope named.
                for tag in SCOPES:
                    if ROLES[principal][tag] is None:
                        hidden = http.get(f"/v1/memories/{seeded.memory[tag]}")
                        assert (hidden.status_code, hidden.json()["error"]) == (404, "not_found")
                assert http.get("/v1/tokens").status_code == 403
                calls += 1
        with httpx.Client(base_url=server.url, timeout=30) as http:
            root = {"Authorization": f"Bearer {seeded.tokens['root']}"}
            assert {t["principal"] for t in http.get("/v1/tokens", headers=root).json()} >= set(ROLES)
            anonymous = http.post("/v1/remember", json={"query": "decision"})
            assert anonymous.status_code == 401
            assert "resource_metadata=" in anonymous.headers["www-authenticate"]
            metadata = http.get("/.well-known/oauth-protected-resource").json()
            assert metadata["resource"] == f"{server.url}/mcp" and metadata["bearer_methods_supported"] == ["header"]
    assert calls == len(ROLES) * (len(NEEDS) * len(SCOPES) + 1)
    assert leaks == 0


async def _mcp_call(client: Client, verb: str, tag: str, seeded: Seeded, service: MemoryService) -> Any:
    scope = SCOPES[tag]
    base = {"scope": scope}
    if verb == "memorize":
        return await client.call_tool("memorize", {**NEW_NOTE, **base})
    if verb == "remember":
        return await client.call_tool("remember", {"query": f"{marker(tag)} decision", **base})
    if verb == "forget":
        memory_id = await anyio.to_thread.run_sync(fresh_memory, service, scope)
        return await client.call_tool("forget", {"id": memory_id, "confirm": True, **base})
    if verb == "knowledge_search":
        return await client.call_tool("knowledge", {"command": "search", "query": "design doc rule", **base})
    if verb == "knowledge_search_in":
        within = {"command": "search", "query": "design doc rule", "source": f"key:doc-{tag}", **base}
        return await client.call_tool("knowledge", within)
    if verb == "knowledge_sources":
        return await client.call_tool("knowledge", {"command": "sources", **base})
    if verb == "knowledge_read":
        return await client.call_tool("knowledge", {"command": "read", "source": f"key:doc-{tag}", **base})
    if verb == "knowledge_match":
        return await client.call_tool("knowledge", {"command": "match", "pattern": "k?zq[a-z]+marker", **base})
    if verb == "knowledge_store":
        return await client.call_tool("knowledge", {"command": "store", "key": "notes", "text": "Some notes.", **base})
    if verb == "status":
        return await client.call_tool("memory_status", base)
    if verb == "handoff_save":
        return await client.call_tool("handoff", {"action": "save", "summary": "Where it stands.", **base})
    if verb == "get":
        return await client.call_tool("memory", {"action": "get", "id": seeded.memory[tag], **base})
    if verb == "audit":
        return await client.call_tool("memory", {"action": "history", "id": seeded.gone[tag], **base})
    if verb == "undo":
        return await client.call_tool("memory", {"action": "undo", "audit_id": seeded.audit[tag]})
    if verb == "export":
        return await client.call_tool("memory", {"action": "export", **base})
    assert verb == "handoff_load"
    return await client.call_tool("handoff", {"action": "load", **base})


def test_the_acl_matrix_over_mcp_http(team_service: MemoryService) -> None:
    seeded = seed(team_service)
    outcomes: list[tuple[str, str, str, bool, str]] = []
    token_calls: list[str] = []

    async def main(url: str) -> None:
        for principal in ROLES:
            auth = {"Authorization": f"Bearer {seeded.tokens[principal]}"}
            async with (
                httpx2.AsyncClient(headers=auth, timeout=30) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
            ):
                for verb in MCP_VERBS:
                    for tag in SCOPES:
                        result = await _mcp_call(client, verb, tag, seeded, team_service)
                        text = json.dumps(result.structured_content) + " ".join(
                            getattr(c, "text", "") for c in result.content
                        )
                        outcomes.append((principal, verb, tag, bool(result.is_error), text))
                # Token admin: not offered to these principals, and refused when called anyway.
                assert "admin" not in {tool.name for tool in (await client.list_tools()).tools}
                refused = await client.call_tool("admin", {"action": "tokens"})
                assert refused.is_error and "forbidden: " in " ".join(getattr(c, "text", "") for c in refused.content)
                token_calls.append(principal)
        auth = {"Authorization": f"Bearer {seeded.tokens['root']}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=30) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            assert "admin" in {tool.name for tool in (await client.list_tools()).tools}
            listed = await client.call_tool("admin", {"action": "tokens"})
            assert {t["principal"] for t in listed.structured_content["tokens"]} >= set(ROLES)
            made = await client.call_tool(
                "admin", {"action": "create_token", "name": "temp", "grants": ["(global):read"]}
            )
            assert made.structured_content["token"].startswith("hm_")
            gone = await client.call_tool(
                "admin", {"action": "revoke_token", "token_id": made.structured_content["id"]}
            )
            assert gone.structured_content["revoked_at"] is not None

    with ServerThread(team_service) as server:
        anyio.run(main, server.url)
        with httpx.Client(base_url=server.url, timeout=30) as http:
            headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
            assert (
                http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers).status_code
                == 401
            )
    assert len(outcomes) == len(ROLES) * len(MCP_VERBS) * len(SCOPES)
    assert token_calls == list(ROLES)
    leaks = 0
    for principal, verb, tag, failed, text in outcomes:
        where = f"{principal} {verb} {tag}: {text[:300]}"
        if allowed(principal, verb, tag):
            # An allowed undo reaches the record and is refused for what it is (a forget).
            assert not failed or (verb == "undo" and "cannot_undo: " in text), where
        else:
            assert failed and ("forbidden: " in text or "not_found: " in text), where
        leaks += sum(mark in text for mark in unreadable_marks(principal, seeded))
    assert leaks == 0


def test_a_reader_searches_within_an_indexed_file_without_indexing_it(
    team_service: MemoryService, tmp_path: Path
) -> None:
    seeded = seed(team_service)
    runbook = tmp_path / "runbook.md"
    runbook.write_text("# Runbook\n\nRestart the zq queue with the drain flag first.\n")
    acme = SCOPES["acme"]
    admin = Caller(principal="admin")
    team_service.knowledge.ingest(IngestRequest(paths=[str(runbook)], scope=acme), admin, FileAccess())
    before = len(team_service.store.audit_log())
    with ServerThread(team_service) as server:
        bob = {"Authorization": f"Bearer {seeded.tokens['bob']}"}  # read on acme: may not index there
        with httpx.Client(base_url=server.url, headers=bob, timeout=30) as http:
            body = {"query": "restart the queue", "source": str(runbook), "scope": acme}
            found = http.post("/v1/knowledge/search", json=body)
            assert found.status_code == 200, found.text
            assert found.json()["indexed"] == "stored"
            assert {r["source"] for r in found.json()["results"]} == {str(runbook)}
            # Not indexed in a scope of his: refused as before, for want of write.
            other = tmp_path / "other.md"
            other.write_text("# Other\n\nNothing indexed.\n")
            refused = http.post("/v1/knowledge/search", json={**body, "source": str(other)})
            assert refused.status_code == 403, refused.text
    # The search within the indexed file recorded no refusal; the refused one did.
    since = team_service.store.audit_log()[before:]
    assert [e.detail.get("request") for e in since if e.action == "denied"] == ["POST /v1/knowledge/search"]
