"""A team server's write effects follow grants, on REST and MCP over real HTTP.

The access matrix (``test_team_acl``) checks which verbs each principal may call in each scope.
These cells check what a permitted write may *do*: an edge that rewrites its target (``supersedes``
ends its validity; ``closes`` on a goal consolidates its findings) takes what an edit of the target
takes, a job record is read by its owner or an admin of its scopes only, and a session locked to a
project exports nothing else. Each refusal must leave the target exactly as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.model import MemoryState
from hivemem.schemas import LinkCreate, MemoryCreate
from hivemem.token_schemas import TokenCreate
from tests.api.test_team_acl import ServerThread, team_service

__all__ = ["team_service"]  # the access matrix's fixture, re-exported for pytest

GLOBAL = ""
ACME = "github.com/acme/api"
BETA = "github.com/beta/web"
GRANTS = {
    "reader": ["(global):read", f"{ACME}:read"],  # and admin of its own user/reader, as everyone
    "writer": [f"{ACME}:write"],
    "owner": [f"{ACME}:admin"],
}


def tokens(service: MemoryService) -> dict[str, str]:
    admin = Caller(principal="admin")
    return {name: service.tokens.create(TokenCreate(name=name, grants=g), admin).token for name, g in GRANTS.items()}


def admin_note(service: MemoryService, scope: str, title: str, **fields: Any) -> str:
    note = MemoryCreate(title=title, content=f"{title}: the team's current rule.", scope=scope, **fields)
    return service.memorize_many([note], Caller(principal="admin"))[0].id


def goal_with_finding(service: MemoryService, scope: str) -> tuple[str, str]:
    goal = admin_note(service, scope, "Cut the build time", memory_type="goal")
    link = LinkCreate(target_id=goal, relationship_type="achieves")
    finding = admin_note(service, scope, "Cache the wheels", related_to=[link])
    return goal, finding


def untouched(service: MemoryService, *ids: str) -> bool:
    """Every memory of ``ids`` still valid, working and at its importance (no edge's effect landed)."""
    return all(
        m.valid_to is None and m.state is MemoryState.WORKING and m.importance == 0.5
        for m in service.store.get_many(list(ids), vectors=False)
    )


def edge(target: str, kind: str) -> dict[str, Any]:
    return {"target_id": target, "relationship_type": kind}


def test_edges_that_rewrite_need_the_right_to_change_their_target_over_rest(team_service: MemoryService) -> None:
    service = team_service
    held = tokens(service)
    global_rule = admin_note(service, GLOBAL, "Release checklist")
    acme_rule = admin_note(service, ACME, "Deploy window")
    goal, finding = goal_with_finding(service, ACME)
    edges_before = service.store.relations(acme_rule)  # the `similar` links its neighbours made
    with ServerThread(service) as server:

        def post(who: str, body: dict[str, Any]) -> httpx.Response:
            auth = {"Authorization": f"Bearer {held[who]}"}
            return httpx.post(f"{server.url}/v1/memories", json=body, headers=auth, timeout=30)

        # A reader of global, writing in the scope it administers (its own), supersedes nothing global.
        note = {"title": "Newer checklist", "content": "Releases need two approvals now.", "scope": "user/reader"}
        refused = post("reader", {**note, "related_to": [edge(global_rule, "supersedes")]})
        assert refused.status_code == 403, refused.text
        assert "supersede" in refused.json()["message"] and "takes admin" in refused.json()["message"]
        # A writer of acme may not supersede or close what another wrote there (forget and edit take admin).
        for target, kind in ((acme_rule, "supersedes"), (goal, "closes")):
            body = {
                "title": "Newer",
                "content": f"A newer note {kind}.",
                "scope": ACME,
                "related_to": [edge(target, kind)],
            }
            answer = post("writer", body)
            assert answer.status_code == 403, answer.text
            assert "takes admin" in answer.json()["message"]
        assert untouched(service, global_rule, acme_rule, goal, finding)
        assert service.store.relations(acme_rule) == edges_before  # refused whole: no plain edge either
        # A plain edge only links: reading the target is enough.
        linked = post("reader", {**note, "related_to": [edge(global_rule, "related_to")]})
        assert linked.status_code == 201, linked.text
        # The writer's own memory it may supersede; the scope's admin may close the admin's goal.
        own = post("writer", {"title": "API port", "content": "The API listens on 8080.", "scope": ACME}).json()["id"]
        newer = {"title": "API port", "content": "The API listens on 9090.", "scope": ACME}
        assert post("writer", {**newer, "related_to": [edge(own, "supersedes")]}).status_code == 201
        closing = {"title": "Build is fast", "content": "Builds take 4 minutes now.", "scope": ACME}
        assert post("owner", {**closing, "related_to": [edge(goal, "closes")]}).status_code == 201
    assert service.store.get(own).valid_to is not None
    assert service.store.get(finding).state is MemoryState.CONSOLIDATED


def test_a_writer_may_not_close_its_goal_over_findings_of_others(team_service: MemoryService) -> None:
    service = team_service
    held = tokens(service)
    with ServerThread(service) as server:
        auth = {"Authorization": f"Bearer {held['writer']}"}

        def post(body: dict[str, Any]) -> httpx.Response:
            return httpx.post(f"{server.url}/v1/memories", json=body, headers=auth, timeout=30)

        made = post({"title": "Faster CI", "content": "Speed up CI.", "memory_type": "goal", "scope": ACME})
        goal = made.json()["id"]
        finding = admin_note(
            service, ACME, "Cache the wheels", related_to=[LinkCreate(target_id=goal, relationship_type="achieves")]
        )
        answer = post(
            {
                "title": "CI is fast",
                "content": "CI takes 3 minutes.",
                "scope": ACME,
                "related_to": [edge(goal, "closes")],
            }
        )
    assert answer.status_code == 403, answer.text
    assert untouched(service, goal, finding)


def test_a_job_is_read_by_its_owner_and_the_admins_of_its_scope(team_service: MemoryService) -> None:
    service = team_service
    held = tokens(service)
    with ServerThread(service) as server:

        def job(who: str, job_id: str) -> int:
            auth = {"Authorization": f"Bearer {held[who]}"}
            return httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=auth, timeout=30).status_code

        auth = {"Authorization": f"Bearer {held['writer']}"}
        bulk = {"memories": [{"title": "Linting", "content": "We lint with ruff.", "scope": ACME}]}
        made = httpx.post(f"{server.url}/v1/memories/bulk", json=bulk, headers=auth, timeout=30)
        assert made.status_code in (201, 202), made.text
        job_id = made.json()["job_id"]
        assert job("writer", job_id) == 200  # its owner
        assert job("owner", job_id) == 200  # admin of the scope it wrote in
        assert job("reader", job_id) == 404  # a reader of that scope: the same answer as an unknown id
        assert job("reader", "job_0123") == 404

        async def over_mcp() -> tuple[Any, Any]:
            answers = []
            for who in ("reader", "writer"):
                headers = {"Authorization": f"Bearer {held[who]}"}
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
                ):
                    answers.append(await client.call_tool("job", {"job_id": job_id}))
            return answers[0], answers[1]

        foreign, own = anyio.run(over_mcp)
    assert foreign.is_error and "not_found: " in foreign.content[0].text
    assert json.dumps(foreign.structured_content or {}).find("ruff") < 0
    assert not own.is_error and own.structured_content["id"] == job_id


def test_a_locked_session_exports_its_project_only(team_service: MemoryService) -> None:
    service = team_service
    held = tokens(service)
    admin_note(service, ACME, "Acme rule")
    beta = admin_note(service, BETA, "Beta rule")
    root = service.tokens.create(TokenCreate(name="root", grants=["*:admin"]), Caller(principal="admin")).token

    async def export(url: str, scope: str | None) -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {root}"}, timeout=30) as http,
            Client(streamable_http_client(f"{url}/mcp/{ACME}", http_client=http)) as client,
        ):
            arguments = {"action": "export"} if scope is None else {"action": "export", "scope": scope}
            return await client.call_tool("memory", arguments)

    with ServerThread(service) as server:
        other = anyio.run(export, server.url, BETA)
        own = anyio.run(export, server.url, None)
    assert held  # the principals exist; the root token may read every scope, the lock still holds
    assert other.is_error and "locked to scope" in other.content[0].text
    assert beta not in json.dumps(other.structured_content or {})
    assert not own.is_error and "Acme rule" in own.structured_content["export"]
    assert beta not in own.structured_content["export"]


def bad_token_addresses(service: MemoryService) -> list[str]:
    """The client addresses the audit log recorded for refused tokens."""
    return [e.detail["address"] for e in service.store.audit_log() if e.detail.get("request") == "authenticate"]


def test_forwarded_addresses_from_loopback_are_ignored_unless_the_proxy_is_named(tmp_path: Path) -> None:
    bad = {"Authorization": "Bearer hm_000000000000_" + "x" * 43}
    for trusted, expected in (((), "127.0.0.1"), (("127.0.0.1",), "203.0.113.7")):
        settings = Settings(
            data_dir=tmp_path / f"data{len(trusted)}",
            embed_model="hash:64",
            team=True,
            auth_failures_per_min=3,
            trusted_proxies=trusted,
        )
        service = MemoryService.from_settings(settings)
        try:
            with ServerThread(service) as server, httpx.Client(base_url=server.url, timeout=30) as http:
                statuses = []
                for i in range(5):
                    # A new forged address each time: ignored, every request counts against loopback.
                    forged = {"X-Forwarded-For": "203.0.113.7" if trusted else f"198.51.100.{i}"}
                    statuses.append(http.get("/v1/status", headers={**bad, **forged}).status_code)
            assert set(bad_token_addresses(service)) == {expected}
            assert statuses == [401, 401, 401, 429, 429]
        finally:
            service.close()


def test_a_trusted_proxy_must_be_an_address_or_network() -> None:
    with pytest.raises(ValueError, match="not addresses or networks"):
        Settings(trusted_proxies="proxy.example.com")
    assert Settings(trusted_proxies="10.0.0.0/8, 127.0.0.1").trusted_proxies == ("10.0.0.0/8", "127.0.0.1")


def test_edges_that_rewrite_follow_grants_over_mcp(team_service: MemoryService) -> None:
    service = team_service
    held = tokens(service)
    global_rule = admin_note(service, GLOBAL, "Release checklist")
    acme_rule = admin_note(service, ACME, "Deploy window")

    async def memorize(url: str, who: str, arguments: dict[str, Any]) -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {held[who]}"}, timeout=30) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            return await client.call_tool("memorize", arguments)

    with ServerThread(service) as server:
        note = {"title": "Newer checklist", "content": "Releases need two approvals now."}
        by_reader = {**note, "scope": "user/reader", "related_to": [edge(global_rule, "supersedes")]}
        by_writer = {**note, "scope": ACME, "related_to": [edge(acme_rule, "supersedes")]}
        refused = [
            anyio.run(memorize, server.url, who, args) for who, args in (("reader", by_reader), ("writer", by_writer))
        ]
        linked = anyio.run(
            memorize, server.url, "writer", {**note, "scope": ACME, "related_to": [edge(acme_rule, "related_to")]}
        )
    for answer in refused:
        assert answer.is_error and "forbidden: " in answer.content[0].text, answer.content
    assert not linked.is_error
    assert untouched(service, global_rule, acme_rule)
