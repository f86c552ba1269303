"""The MCP tools, in process: the SDK's client against ``build_mcp`` over a real service and store."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

import hivemem
from api.mcp import tools as mcp_tools
from api.mcp.server import SessionScope, build_mcp
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import MemoryNotFoundError
from hivemem.knowledge_schemas import KnowledgeStoreRequest
from hivemem.schemas import MemoryCreate

SCOPE = "github.com/acme/api"
# A session in SCOPE as derived from a working directory: a `scope` argument may override it.
DERIVED = SessionScope(SCOPE)


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    opened = MemoryService.from_settings(settings)
    try:
        yield opened
    finally:
        opened.close()


def run_with_client(
    service: MemoryService, body: Callable[[Client], Awaitable[None]], session: SessionScope = DERIVED
) -> None:
    """Run ``body`` with an in-memory MCP client connected to the tools over ``service``, by default
    in a session whose scope is ``SCOPE`` (as derived from a working directory)."""

    async def main() -> None:
        async with Client(build_mcp(lambda: service, session=session)) as client:
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
    assert set(seen) == {"memorize", "remember", "job", "forget", "memory", "knowledge", "handoff", "memory_status"}
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
    assert seen["memory_status"].annotations.read_only_hint is True
    assert seen["handoff"].input_schema["properties"]["action"]["enum"] == ["save", "load"]
    assert seen["memory"].input_schema["properties"]["action"]["enum"] == ["get", "history", "verify", "undo", "export"]


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
    assert service.store.get(out["id"]).scope == SCOPE


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
    assert service.store.get(out["id"]).scope == ""


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
    assert service.store.get(out["id"]).scope == "github.com/acme/web"


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
    assert service.store.get(memory_id).id == memory_id


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
        service.store.get(out["id"])


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


# -- schemas, arguments and the session's scope -------------------------------------------------


def listed_tools(service: MemoryService, session: SessionScope = DERIVED) -> dict[str, Any]:
    tools: dict[str, Any] = {}

    async def body(client: Client) -> None:
        tools.update({tool.name: tool for tool in (await client.list_tools()).tools})

    run_with_client(service, body, session)
    return tools


def test_tool_schemas_carry_the_limits_and_take_nothing_else(service: MemoryService) -> None:
    tools = listed_tools(service)
    memorize = tools["memorize"].input_schema
    assert memorize["additionalProperties"] is False
    props = memorize["properties"]
    assert (props["title"]["minLength"], props["title"]["maxLength"]) == (5, 200)
    assert (props["content"]["minLength"], props["content"]["maxLength"]) == (10, 10_000)
    assert (props["importance"]["minimum"], props["importance"]["maximum"]) == (0, 1)
    tags = next(branch for branch in props["tags"]["anyOf"] if branch.get("type") == "array")
    assert tags["maxItems"] == 32 and tags["items"]["maxLength"] == 64
    # The scope's pattern says what a scope may hold; the text fields' control-character rule is
    # the server's to check (see test_a_text_rule_left_out_of_the_schema_is_still_enforced).
    assert "pattern" in props["scope"]["anyOf"][0]
    assert "pattern" not in props["title"] and "pattern" not in tags["items"]
    remember = tools["remember"].input_schema["properties"]
    assert (remember["limit"]["minimum"], remember["limit"]["maximum"]) == (1, 100)
    queries = next(branch for branch in remember["query"]["anyOf"] if branch.get("type") == "array")
    assert (queries["minItems"], queries["maxItems"]) == (1, 5)
    assert all(tool.input_schema["additionalProperties"] is False for tool in tools.values())


def test_tool_schemas_leave_out_what_an_agent_cannot_use(service: MemoryService) -> None:
    # Every session's context holds these: no generated titles, no control-character classes.
    tools = listed_tools(service)
    listed = json.dumps([tool.input_schema for tool in tools.values()])
    assert "\\x00-\\x08" not in listed and '"title": "Related Files"' not in listed
    assert '"title": {' in listed  # the memorize argument named title is still there
    # A budget (about 20,000 characters in all now): a tool that takes the listing past it says why.
    # 20,000 -> 21,000: forget in bulk (a query, six filters, a preview token) and memory's verify.
    assert sum(len(json.dumps(tool.model_dump(mode="json", exclude_none=True))) for tool in tools.values()) < 21_000


def test_an_answers_text_is_its_structured_content_on_one_line(service: MemoryService) -> None:
    results: list[Any] = []

    async def body(client: Client) -> None:
        await client.call_tool("memorize", {"title": "Billing owner", "content": "Payments team owns billing."})
        results.append(await client.call_tool("remember", {"query": "who owns billing"}))

    run_with_client(service, body)
    (text,) = (part.text for part in results[0].content)
    assert "\n" not in text and json.loads(text) == structured(results[0])
    assert structured(results[0])["results"][0]["title"] == "Billing owner"


def test_a_text_rule_left_out_of_the_schema_is_still_enforced(service: MemoryService) -> None:
    texts: list[str] = []

    async def body(client: Client) -> None:
        bell = {"title": "Bell\x07 title", "content": "Long enough."}
        texts.append(error_text(await client.call_tool("memorize", bell)))
        texts.append(error_text(await client.call_tool("remember", {"query": ["fine", "nul\x00"]})))

    run_with_client(service, body)
    assert texts[0].endswith(
        "title: must hold at least 5 characters besides surrounding whitespace, and no control characters"
    )
    assert "without control characters" in texts[1]
    assert service.store.count() == 0


def _descriptions(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _descriptions(value)


def test_schema_descriptions_are_plain_words_for_agents(service: MemoryService) -> None:
    # Docstrings become descriptions: the markup written for developers must not reach agents.
    for tool in listed_tools(service).values():
        for text in _descriptions([tool.input_schema, tool.output_schema]):
            assert not re.search(r"``|:(?:class|func|meth|mod):|\n", text), (tool.name, text)


def test_unknown_arguments_and_conflicting_scopes_are_refused(service: MemoryService) -> None:
    texts: list[str] = []

    async def body(client: Client) -> None:
        good = {"title": "Fine title", "content": "Long enough content."}
        texts.append(error_text(await client.call_tool("memorize", good | {"bogus": 1})))
        texts.append(error_text(await client.call_tool("remember", {"query": "q", "limits": 3})))
        texts.append(error_text(await client.call_tool("memorize", good | {"global": True, "scope": "acme/x"})))

    run_with_client(service, body)
    assert "bogus" in texts[0] and "Extra inputs are not permitted" in texts[0]
    assert "limits" in texts[1]
    assert "either `scope` or `global: true`" in texts[2]
    assert service.store.count() == 0


def test_invalid_arguments_are_named_field_by_field_as_over_rest(service: MemoryService) -> None:
    texts: list[str] = []

    async def body(client: Client) -> None:
        texts.append(error_text(await client.call_tool("remember", {"query": "x" * 2001})))
        texts.append(error_text(await client.call_tool("remember", {"query": ["a"] * 6, "limit": 0})))
        texts.append(error_text(await client.call_tool("memorize", {"title": "x", "content": "too short"})))
        texts.append(error_text(await client.call_tool("knowledge", {"command": "find", "query": "x"})))

    run_with_client(service, body)
    either = "must be a non-blank string of up to 2000 characters without control characters, or a list of 1 to 5"
    assert texts[0] == f"Error executing tool remember: invalid input: query: {either} such strings"
    assert texts[1] == (
        f"Error executing tool remember: invalid input: query: {either} such strings; "
        "limit: Input should be greater than or equal to 1"
    )
    assert texts[2] == (
        "Error executing tool memorize: invalid input: title: String should have at least 5 characters; "
        "content: String should have at least 10 characters"
    )
    assert texts[3].startswith("Error executing tool knowledge: invalid input: command: Input should be 'search'")
    # None of pydantic's own report: its model names, union type tags, object addresses or links.
    assert not any(marker in text for text in texts for marker in ("Arguments", "function-after", " at 0x", "http"))
    assert service.store.count() == 0


def test_server_info_names_the_package_version(service: MemoryService) -> None:
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        seen["info"] = client.server_info

    run_with_client(service, body)
    assert seen["info"].name == "hivemem"
    assert seen["info"].version == hivemem.__version__ != ""


def test_a_locked_session_offers_no_scope_and_refuses_others(service: MemoryService) -> None:
    locked = SessionScope(SCOPE, locked=True)
    tools = listed_tools(service, locked)
    for name in ("memorize", "remember", "forget"):
        assert "scope" not in tools[name].input_schema["properties"], name
    assert f"works in project scope `{SCOPE}`" in tools["memorize"].description
    assert tools["memory_status"].description.endswith(f"Works in project scope `{SCOPE}`.")
    assert tools["memory"].description.endswith(f"Finds the memory in project scope `{SCOPE}` or global.")
    other = service.memorize(MemoryCreate(title="Other project", content="Belongs to another scope.", scope="b/x"))
    texts: list[str] = []
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        texts.append(
            error_text(
                await client.call_tool(
                    "memorize", {"title": "Sneaky", "content": "Into another project's scope.", "scope": "b/x"}
                )
            )
        )
        texts.append(error_text(await client.call_tool("forget", {"id": other.id, "confirm": True})))
        out["stored"] = structured(await client.call_tool("memorize", {"title": "Locked in", "content": "Stays here."}))

    run_with_client(service, body, locked)
    assert "scope" in texts[0]
    assert "not_found" in texts[1]
    assert f"in scope '{SCOPE}' or the global scope; this session is locked to scope '{SCOPE}'" in texts[1]
    assert out["stored"]["scope"] == SCOPE
    assert service.store.get(other.id).scope == "b/x"


def test_a_session_that_names_no_project_says_so_and_writes_nowhere_by_default(service: MemoryService) -> None:
    nowhere = SessionScope(None)
    tools = listed_tools(service, nowhere)
    assert "names no project" in tools["memorize"].description
    assert "Searches global memories" in tools["remember"].description
    # Each tool says where it works: a status or a handoff is one scope's, a memory by id is found
    # in the scope or global.
    assert "Works in the global scope, or in `scope`" in tools["memory_status"].description
    assert "a handoff save needs it" in tools["handoff"].description
    assert "Finds the memory among global ones, or in `scope`" in tools["forget"].description
    texts: list[str] = []
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        texts.append(
            error_text(await client.call_tool("memorize", {"title": "Where to?", "content": "No scope given."}))
        )
        out["named"] = structured(
            await client.call_tool("memorize", {"title": "Named", "content": "Explicit scope.", "scope": "a/b"})
        )
        out["global"] = structured(
            await client.call_tool("memorize", {"title": "Shared", "content": "For everyone.", "global": True})
        )
        out["recall"] = structured(await client.call_tool("remember", {"query": "explicit scope"}))

    run_with_client(service, body, nowhere)
    assert "names no project" in texts[0]
    assert (out["named"]["scope"], out["global"]["scope"]) == ("a/b", "")
    assert out["recall"]["scopes"] == [""]
    assert service.store.count() == 2


def test_a_derived_session_names_its_default_and_lets_a_call_override_it(service: MemoryService) -> None:
    tools = listed_tools(service)
    assert f"project scope `{SCOPE}` (this session's default) unless you pass `scope`" in tools["memorize"].description
    assert "scope" in tools["memorize"].input_schema["properties"]


def test_memorize_links_to_existing_memories_and_refuses_unknown_ones(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        goal = structured(
            await client.call_tool(
                "memorize", {"title": "Goal: faster CI", "content": "CI under ten minutes.", "memory_type": "goal"}
            )
        )
        link = {"target_id": goal["id"], "relationship_type": "achieves"}
        out["goal"] = goal["id"]
        out["finding"] = structured(
            await client.call_tool(
                "memorize",
                {"title": "Cached wheels", "content": "Caching wheels saves four minutes.", "related_to": [link]},
            )
        )["id"]
        unknown = {"target_id": "00000000-0000-4000-8000-000000000000", "relationship_type": "achieves"}
        out["refused"] = error_text(
            await client.call_tool(
                "memorize", {"title": "Dangling", "content": "Points nowhere at all.", "related_to": [unknown]}
            )
        )

    run_with_client(service, body)
    edges = service.store.relations(out["goal"])
    assert [(e.source_id, e.type.value) for e in edges] == [(out["finding"], "achieves")]
    assert "related_to[0].target_id: no memory with id 00000000-0000-4000-8000-000000000000" in out["refused"]


def test_the_memory_tool_gets_a_memory_reads_its_history_and_undoes_a_supersede(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        old = structured(
            await client.call_tool("memorize", {"title": "Deploy day", "content": "Deploys go out on Tuesdays."})
        )["id"]
        link = {"target_id": old, "relationship_type": "supersedes"}
        new = structured(
            await client.call_tool(
                "memorize", {"title": "Deploy day now", "content": "Deploys go out on Thursdays.", "related_to": [link]}
            )
        )["id"]
        out["got"] = structured(await client.call_tool("memory", {"action": "get", "id": new}))
        recalled = structured(await client.call_tool("remember", {"query": "which day do deploys go out"}))
        out["recalled"] = {r["id"]: r.get("valid_to") for r in recalled["results"]}
        (record,) = structured(await client.call_tool("memory", {"action": "history", "id": new}))["records"]
        out["record"] = record
        out["undone"] = structured(await client.call_tool("memory", {"action": "undo", "audit_id": record["id"]}))
        out["again"] = error_text(await client.call_tool("memory", {"action": "undo", "audit_id": record["id"]}))
        out["old"] = structured(await client.call_tool("memory", {"action": "get", "id": old}))
        out["errors"] = [
            error_text(await client.call_tool("memory", arguments))
            for arguments in (
                {"action": "get"},
                {"action": "undo"},
                {"action": "undo", "audit_id": record["id"], "id": new},
                {"action": "history", "id": new, "audit_id": "1"},
                {"action": "get", "id": "00000000-0000-4000-8000-000000000000"},
                {"action": "forget", "id": new},
            )
        ]

    run_with_client(service, body)
    assert out["got"]["title"] == "Deploy day now"
    # Recall says which of the two is history (the tool's description tells agents what valid_to means).
    assert out["recalled"][out["got"]["id"]] is None and out["recalled"][out["old"]["id"]] is not None
    assert [(r["type"], r["target_id"]) for r in out["got"]["relations"]] == [("supersedes", out["old"]["id"])]
    assert out["record"]["action"] == "supersede"
    assert out["undone"] == {"audit_id": out["record"]["id"], "action": "supersede", "restored": [out["old"]["id"]]}
    assert "already undone" in out["again"]
    assert out["old"]["valid_to"] is None and out["old"]["relations"] == []
    needs_id, needs_record, undo_extra, history_extra, unknown, bad_action = out["errors"]
    assert "`get` needs an `id`" in needs_id and "`undo` needs an `audit_id`" in needs_record
    assert "`undo` takes no id" in undo_extra and "`history` takes no audit_id" in history_extra
    assert "not_found" in unknown and "action" in bad_action


def test_the_memory_tool_exports_the_scope_and_the_admin_tool_is_for_administrators(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        structured(await client.call_tool("memorize", {"title": "Deploy day", "content": "Deploys go on Tuesdays."}))
        out["export"] = structured(await client.call_tool("memory", {"action": "export"}))
        out["extra"] = error_text(await client.call_tool("memory", {"action": "export", "id": "x"}))
        # An export longer than a tool's answer should be is refused, pointing to the CLI and REST.
        monkeypatch.setattr(mcp_tools, "MAX_TOOL_EXPORT_CHARS", len(out["export"]["export"]) - 1)
        out["too_long"] = error_text(await client.call_tool("memory", {"action": "export"}))
        monkeypatch.undo()
        out["listed"] = {tool.name for tool in (await client.list_tools()).tools}
        # Not listed to a session without an administrator's token; the local caller may still call it.
        out["tokens"] = structured(await client.call_tool("admin", {"action": "tokens"}))
        out["admin_errors"] = [
            error_text(await client.call_tool("admin", arguments))
            for arguments in (
                {"action": "create_token"},
                {"action": "tokens", "name": "alice"},
                {"action": "revoke_token"},
                {"action": "revoke_token", "token_id": "not-an-id"},
            )
        ]

    run_with_client(service, body)
    lines = [json.loads(line) for line in out["export"]["export"].splitlines()]
    assert out["export"]["lines"] == len(lines) == 2
    assert [line["kind"] for line in lines] == ["header", "memory"] and lines[1]["scope"] == SCOPE
    assert "`export` takes no id" in out["extra"]
    assert "too long for a tool's answer" in out["too_long"] and "GET /v1/export" in out["too_long"]
    assert "admin" not in out["listed"] and out["tokens"] == {"tokens": []}
    needs_name, extra, needs_id, bad_id = out["admin_errors"]
    assert "`create_token` needs a `name`" in needs_name and "`tokens` takes no name" in extra
    assert "`revoke_token` needs a `token_id`" in needs_id and "token_id" in bad_id


def test_handoff_saves_and_loads_and_memory_status_reports(service: MemoryService) -> None:
    out: dict[str, Any] = {}

    async def body(client: Client) -> None:
        out["empty"] = structured(await client.call_tool("handoff", {"action": "load"}))
        out["saved"] = structured(
            await client.call_tool(
                "handoff",
                {"action": "save", "summary": "Ported the parser; writer next.", "next_steps": ["port the writer"]},
            )
        )
        out["loaded"] = structured(await client.call_tool("handoff", {"action": "load"}))
        out["no_summary"] = error_text(await client.call_tool("handoff", {"action": "save"}))
        out["load_with_fields"] = error_text(
            await client.call_tool("handoff", {"action": "load", "summary": "Not for loading."})
        )
        out["status"] = structured(await client.call_tool("memory_status", {}))

    run_with_client(service, body)
    assert out["empty"] == {"handoff": None}
    assert out["saved"]["outcome"] == "stored"
    assert out["loaded"]["handoff"]["id"] == out["saved"]["id"]
    assert out["loaded"]["handoff"]["next_steps"] == ["port the writer"]
    assert "needs a `summary`" in out["no_summary"] and "takes no summary" in out["load_with_fields"]
    assert out["status"]["scope"] == SCOPE and out["status"]["by_type"] == {"handoff": {"working": 1}}


def test_the_knowledge_tool_lists_the_documents_of_the_scope_and_global(service: MemoryService) -> None:
    seen: list[Any] = []

    async def body(client: Client) -> None:
        seen.append(structured(await client.call_tool("knowledge", {"command": "sources"})))
        for key, where in (("runbook", {}), ("glossary", {"scope": ""}), ("elsewhere", {"scope": "other/project"})):
            stored = {"command": "store", "key": key, "text": f"The {key} of the team.", **where}
            structured(await client.call_tool("knowledge", stored))
        seen.append(structured(await client.call_tool("knowledge", {"command": "sources"})))
        seen.append(error_text(await client.call_tool("knowledge", {"command": "sources", "query": "x"})))

    run_with_client(service, body)
    assert seen[0] == {"sources": [], "total": 0, "next_offset": None}
    listed = {(s["scope"], s["uri"], s["chunk_count"]) for s in seen[1]["sources"]}
    assert listed == {(SCOPE, "key:runbook", 1), ("", "key:glossary", 1)}  # not another project's
    assert (seen[1]["total"], seen[1]["next_offset"]) == (2, None)
    assert "`sources` does not take query" in seen[2]


def test_the_knowledge_tool_lists_many_documents_a_page_at_a_time(service: MemoryService) -> None:
    for n in range(120):
        service.knowledge.store_text(
            KnowledgeStoreRequest(key=f"note-{n:03}", text=f"Note {n} of the team's runbook.", scope=SCOPE),
            Caller(default_scope=SCOPE),
        )
    pages: list[dict[str, Any]] = []

    async def body(client: Client) -> None:
        pages.append(structured(await client.call_tool("knowledge", {"command": "sources"})))
        pages.append(structured(await client.call_tool("knowledge", {"command": "sources", "offset": 50})))
        pages.append(
            structured(await client.call_tool("knowledge", {"command": "sources", "offset": 100, "limit": 30}))
        )

    run_with_client(service, body)
    # An index of thousands must not land in an agent's context at once: 50 a page unless asked.
    assert [len(p["sources"]) for p in pages] == [50, 50, 20]
    assert [p["next_offset"] for p in pages] == [50, 100, None]
    assert {p["total"] for p in pages} == {120}
    uris = [s["uri"] for p in pages for s in p["sources"]]
    assert uris == sorted(uris) and len(set(uris)) == 120


def test_a_session_is_a_thread_unless_the_call_names_one(service: MemoryService) -> None:
    mcp = build_mcp(lambda: service, session=DERIVED)
    ids: list[list[str]] = []

    async def one_session(texts: list[str], thread: str | None = None) -> None:
        async with Client(mcp) as client:
            stored = []
            for text in texts:
                arguments = {"title": text[:30], "content": text} | ({} if thread is None else {"thread": thread})
                stored.append(structured(await client.call_tool("memorize", arguments))["id"])
            ids.append(stored)

    anyio.run(one_session, ["Staging runs the nightly migrations.", "Migrations need a maintenance window."])
    anyio.run(one_session, ["The search index is rebuilt on Sundays."])
    anyio.run(one_session, ["Releases are cut from main."], "release-planning")
    threads = [[service.store.get(i).thread for i in session] for session in ids]
    first, second, named = threads
    assert first[0] == first[1] and first[0].startswith("mcp-session-")  # one session, one thread
    assert second[0] != first[0] and second[0].startswith("mcp-session-")  # another session, another
    assert named == ["release-planning"]  # a thread the call names is kept
