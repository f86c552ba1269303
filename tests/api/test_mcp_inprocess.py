"""The MCP tools, in process: the SDK's client against ``build_mcp`` over a real service and store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from api.mcp_server import build_mcp
from api.service import MemoryService
from hivemem.config import Settings
from hivemem.errors import MemoryNotFoundError
from hivemem.schemas import MemoryCreate

SCOPE = "github.com/acme/api"


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    opened = MemoryService.from_settings(settings)
    try:
        yield opened
    finally:
        opened.close()


def run_with_client(service: MemoryService, body: Callable[[Client], Awaitable[None]]) -> None:
    """Run ``body`` with an in-memory MCP client connected to the tools over ``service``."""

    async def main() -> None:
        async with Client(build_mcp(lambda: service, default_scope=SCOPE)) as client:
            await body(client)

    anyio.run(main)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: dict[str, Any] = result.structured_content
    return content


def error_text(result: Any) -> str:
    assert result.is_error
    return " ".join(getattr(part, "text", "") for part in result.content)


def test_tools_are_listed_with_descriptions_and_annotations(service: MemoryService) -> None:
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        seen.update({tool.name: tool for tool in (await client.list_tools()).tools})

    run_with_client(service, body)
    assert set(seen) == {"memorize", "remember", "job", "forget"}
    for tool in seen.values():
        assert tool.description and len(tool.description) > 50
        assert tool.annotations is not None
        assert tool.input_schema["type"] == "object"
    assert seen["remember"].annotations.read_only_hint is True
    assert seen["job"].annotations.read_only_hint is True
    assert seen["memorize"].annotations.read_only_hint is False
    assert seen["forget"].annotations.destructive_hint is True
    assert seen["forget"].annotations.read_only_hint is False
    assert "global" in seen["memorize"].input_schema["properties"]
    assert {"title", "content"} <= set(seen["memorize"].input_schema["required"])
    assert "confirm" in seen["forget"].input_schema["properties"]


def test_memorize_defaults_to_the_session_scope(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        out.update(
            structured(
                await client.call_tool(
                    "memorize", {"title": "Session scoped", "content": "This lands in the project scope."}
                )
            )
        )

    run_with_client(service, body)
    assert out["outcome"] == "stored"
    assert service.get(out["id"]).scope == SCOPE


def test_memorize_reports_its_job_and_job_tells_its_outcome(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        stored = structured(
            await client.call_tool("memorize", {"title": "Job reported", "content": "Every memorize names its job."})
        )
        out["stored"] = stored
        out["job"] = structured(await client.call_tool("job", {"job_id": stored["job_id"]}))
        out["missing"] = await client.call_tool("job", {"job_id": "job_nope"})

    run_with_client(service, body)
    assert out["stored"]["job_id"].startswith("job_")
    job = out["job"]
    assert (job["state"], job["kind"], job["progress"]) == ("done", "memorize", 1.0)
    assert job["result"]["items"] == [{"id": out["stored"]["id"], "outcome": "stored"}]
    assert "job_not_found" in error_text(out["missing"])


def test_memorize_global_stores_in_the_global_scope(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        out.update(
            structured(
                await client.call_tool(
                    "memorize",
                    {
                        "title": "Personal preference",
                        "content": "Prefer short answers, no fluff.",
                        "global": True,
                    },
                )
            )
        )

    run_with_client(service, body)
    assert service.get(out["id"]).scope == ""


def test_memorize_explicit_scope_overrides_the_session(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        args = {
            "title": "Other project",
            "content": "Belongs to the web project.",
            "scope": "github.com/acme/web",
        }
        out.update(structured(await client.call_tool("memorize", args)))

    run_with_client(service, body)
    assert service.get(out["id"]).scope == "github.com/acme/web"


def test_remember_labels_results_and_reads_scope_plus_global(service: MemoryService) -> None:
    ids: dict[str, str] = {}
    results: list[dict[str, Any]] = []

    async def body(client: Client) -> None:
        for name, args in {
            "confirmed": {
                "title": "Kafka topic naming",
                "content": "Kafka topics are named team.domain.event in kebab case.",
                "source": "user_confirmed",
            },
            "inferred": {
                "title": "Kafka retention",
                "content": "Kafka retention looks like seven days on the orders topic.",
            },
            "global": {
                "title": "Kafka in general",
                "content": "Kafka consumers must be idempotent everywhere.",
                "global": True,
            },
            "elsewhere": {
                "title": "Kafka elsewhere",
                "content": "Kafka partitions in the web project are keyed by user.",
                "scope": "github.com/acme/web",
            },
        }.items():
            ids[name] = structured(await client.call_tool("memorize", args))["id"]
        recalled = structured(await client.call_tool("remember", {"query": ["kafka topics", "kafka"], "limit": 10}))
        results.extend(recalled["results"])

    run_with_client(service, body)
    by_id = {r["id"]: r for r in results}
    assert set(by_id) == {ids["confirmed"], ids["inferred"], ids["global"]}
    assert by_id[ids["confirmed"]]["label"] == "[CONFIRMED]"
    assert by_id[ids["inferred"]]["label"] == "[INFERRED]"
    assert by_id[ids["global"]]["scope"] == ""
    for result in results:
        assert {"id", "title", "content", "scope", "score", "source", "label"} <= result.keys()


def test_forget_without_confirm_is_an_error_and_keeps_the_memory(service: MemoryService) -> None:
    texts: list[str] = []
    memory_id = service.memorize(
        MemoryCreate(title="Keep me around", content="This memory must survive an unconfirmed forget.")
    ).id

    async def body(client: Client) -> None:
        texts.append(error_text(await client.call_tool("forget", {"id": memory_id})))
        texts.append(error_text(await client.call_tool("forget", {"id": memory_id, "confirm": False})))

    run_with_client(service, body)
    assert all("confirm" in text for text in texts)
    assert service.get(memory_id).id == memory_id


def test_forget_with_confirm_deletes(service: MemoryService) -> None:
    out: dict[str, Any] = {}
    missing: list[str] = []

    async def body(client: Client) -> None:
        created = structured(
            await client.call_tool("memorize", {"title": "Wrong memory", "content": "Stored by mistake, remove."})
        )
        out.update(structured(await client.call_tool("forget", {"id": created["id"], "confirm": True})))
        out["id"] = created["id"]
        missing.append(error_text(await client.call_tool("forget", {"id": created["id"], "confirm": True})))

    run_with_client(service, body)
    assert out["forgotten"] == out["id"]
    assert out["title"] == "Wrong memory"
    assert "not_found" in missing[0]
    with pytest.raises(MemoryNotFoundError):
        service.get(out["id"])


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        pytest.param("memorize", {"title": "abc", "content": "Long enough content."}, "title", id="short-title"),
        pytest.param("memorize", {"title": "Fine title", "content": "short"}, "content", id="short-content"),
        pytest.param(
            "memorize",
            {"title": "Fine title", "content": "Long enough content.", "importance": 2},
            "importance",
        ),
        pytest.param(
            "memorize", {"title": "Fine title", "content": "Long enough content.", "scope": "../etc"}, "scope"
        ),
        pytest.param("remember", {"query": "q", "limit": 0}, "limit", id="limit-zero"),
        pytest.param(
            "remember",
            {"query": "q", "created_after": "2026-01-01T00:00:00"},
            "created_after",
            id="naive-date",
        ),
    ],
)
def test_bad_input_is_a_tool_error_naming_the_field(
    service: MemoryService, tool: str, args: dict[str, Any], field: str
) -> None:
    texts: list[str] = []

    async def body(client: Client) -> None:
        texts.append(error_text(await client.call_tool(tool, args)))

    run_with_client(service, body)
    assert field in texts[0]
    assert service.store.count() == 0
