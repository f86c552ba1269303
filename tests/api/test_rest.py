"""The REST contract under /v1, in process: the real app, lifespan and store, through TestClient."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hivemem.config import store_fingerprint
from tests.api.helpers import memorize, recall, stored_count

RESULT_FIELDS = {
    "id",
    "title",
    "content",
    "scope",
    "memory_type",
    "importance",
    "source",
    "score",
    "created_at",
}


# -- the lifecycle ------------------------------------------------------------------------------


def test_memorize_get_remember_reinforce_forget(client: TestClient) -> None:
    created = memorize(
        client,
        title="Postgres connection pool size",
        content="The API pool is capped at 20 connections because RDS allows 100 per instance.",
        scope="github.com/acme/api",
        memory_type="decision",
        importance=0.8,
        source="user_confirmed",
        tags=["db", "postgres"],
        related_files=["api/db.py"],
    )
    assert (created["outcome"], created["scope"]) == ("stored", "github.com/acme/api")
    memory_id = created["id"]
    in_scope = {"scope": "github.com/acme/api"}

    got = client.get(f"/v1/memories/{memory_id}", params=in_scope)
    assert got.status_code == 200
    memory = got.json()
    assert memory["id"] == memory_id
    assert memory["title"] == "Postgres connection pool size"
    assert memory["scope"] == "github.com/acme/api"
    assert memory["memory_type"] == "decision"
    assert memory["importance"] == 0.8
    assert memory["source"] == "user_confirmed"
    assert memory["tags"] == ["db", "postgres"]
    assert memory["related_files"] == ["api/db.py"]

    results = recall(client, query="postgres connection pool", scope="github.com/acme/api")
    assert results, "remember found nothing"
    top = results[0]
    assert top["id"] == memory_id
    assert top.keys() >= RESULT_FIELDS
    assert top["scope"] == "github.com/acme/api"
    assert isinstance(top["score"], float)

    again = client.post(
        "/v1/memories",
        json={
            "title": "Pool size, said again",
            "content": "The API pool is capped at 20 connections because RDS allows 100 per instance.",
            "scope": "github.com/acme/api",
            "tags": ["rds"],
        },
    )
    assert again.status_code == 201
    assert (again.json()["id"], again.json()["outcome"]) == (memory_id, "reinforced")
    assert again.json()["job_id"].startswith("job_")
    assert stored_count(client) == 1
    assert client.get(f"/v1/memories/{memory_id}", params=in_scope).json()["tags"] == ["db", "postgres", "rds"]

    refused = client.delete(f"/v1/memories/{memory_id}", params=in_scope)
    assert refused.status_code == 400
    assert refused.json()["error"] == "confirmation_required"
    assert "confirm" in refused.json()["message"]
    assert client.get(f"/v1/memories/{memory_id}", params=in_scope).status_code == 200
    assert stored_count(client) == 1

    deleted = client.delete(f"/v1/memories/{memory_id}", params={"confirm": "true"} | in_scope)
    assert deleted.status_code == 200
    assert deleted.json()["id"] == memory_id

    missing = client.get(f"/v1/memories/{memory_id}", params=in_scope)
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    assert memory_id in missing.json()["message"]
    assert stored_count(client) == 0
    assert client.delete(f"/v1/memories/{memory_id}", params={"confirm": "true"} | in_scope).status_code == 404
    assert all(r["id"] != memory_id for r in recall(client, query="postgres connection pool"))


def test_identical_content_in_another_scope_is_a_new_memory(client: TestClient) -> None:
    content = "Deploys go out on Tuesdays and Thursdays only, never on Fridays."
    first = memorize(client, content=content, scope="github.com/acme/api")
    second = memorize(client, content=content, scope="github.com/acme/web")
    assert second["outcome"] == "stored"
    assert second["id"] != first["id"]
    assert stored_count(client) == 2


def test_reinforce_ignores_case_and_whitespace_differences(client: TestClient) -> None:
    first = memorize(client, content="Use   ruff for linting and formatting.")
    second = memorize(client, content="use ruff for LINTING and formatting.")
    assert (second["id"], second["outcome"]) == (first["id"], "reinforced")


def test_http_memorize_without_scope_is_global(client: TestClient) -> None:
    created = memorize(client)
    assert client.get(f"/v1/memories/{created['id']}").json()["scope"] == ""


def test_rest_takes_global_true_as_mcp_and_the_cli_do(client: TestClient) -> None:
    project = {"X-Hivemem-Scope": "github.com/acme/api"}
    body = {"title": "Commit messages", "content": "Commit subjects are imperative and under 72 characters."}
    created = client.post("/v1/memories", json={**body, "global": True}, headers=project)
    assert created.status_code == 201, created.text
    assert created.json()["scope"] == ""  # global, not the header's project
    bulk = client.post(
        "/v1/memories/bulk",
        json={"memories": [{**body, "content": "Branches are named after their ticket.", "global": True}]},
    )
    assert bulk.status_code == 201, bulk.text
    both = client.post(
        "/v1/memories", json={**body, "title": "Both ways", "global": True, "scope": "github.com/acme/api"}
    )
    assert both.status_code == 422 and "global" in both.json()["message"]
    assert stored_count(client) == 2


def test_forget_needs_confirm_true_itself(client: TestClient) -> None:
    created = memorize(client)
    response = client.delete(f"/v1/memories/{created['id']}", params={"confirm": "maybe"})
    assert (response.status_code, response.json()["error"]) == (400, "confirmation_required")
    assert "confirm=true" in response.json()["message"]
    assert stored_count(client) == 1


# -- scopes -------------------------------------------------------------------------------------


def test_recall_reads_its_scope_plus_global_only(client: TestClient) -> None:
    a = memorize(client, title="Scope A secret", content="zebra migration plan for billing", scope="acme/a")
    b = memorize(client, title="Scope B note", content="zebra migration plan for search", scope="acme/b")
    shared = memorize(client, title="Global zebra rule", content="zebra migrations always need a rollback", scope="")

    seen_by_a = {r["id"]: r["scope"] for r in recall(client, query="zebra migration", scope="acme/a")}
    seen_by_b = {r["id"]: r["scope"] for r in recall(client, query="zebra migration", scope="acme/b")}
    seen_global = {r["id"] for r in recall(client, query="zebra migration")}

    assert set(seen_by_a) == {a["id"], shared["id"]}
    assert set(seen_by_b) == {b["id"], shared["id"]}
    assert seen_global == {shared["id"]}
    assert set(seen_by_a.values()) == {"acme/a", ""}


def test_recall_in_a_scope_with_no_memories_of_its_own_sees_global(client: TestClient) -> None:
    shared = memorize(client, title="Global preference", content="Always answer in British English spelling.")
    results = recall(client, query="British English spelling", scope="github.com/other/repo")
    assert [r["id"] for r in results] == [shared["id"]]


# -- filters ------------------------------------------------------------------------------------


@pytest.fixture
def filter_corpus(client: TestClient) -> dict[str, str]:
    """Three memories about the same topic, told apart by type and tags."""
    ids = {}
    for name, memory_type, tags in (
        ("decision", "decision", ["cache"]),
        ("bug", "bug_fix", ["cache", "redis"]),
        ("fact", "fact", []),
    ):
        ids[name] = memorize(
            client,
            title=f"Redis cache {name}",
            content=f"Redis cache eviction notes ({name}): keys expire after one hour.",
            memory_type=memory_type,
            tags=tags,
        )["id"]
    return ids


def test_filter_by_memory_types(client: TestClient, filter_corpus: dict[str, str]) -> None:
    results = recall(client, query="redis cache eviction", memory_types=["decision", "bug_fix"])
    assert {r["id"] for r in results} == {filter_corpus["decision"], filter_corpus["bug"]}
    assert {r["memory_type"] for r in results} == {"decision", "bug_fix"}


def test_filter_by_tags(client: TestClient, filter_corpus: dict[str, str]) -> None:
    assert {r["id"] for r in recall(client, query="redis cache eviction", tags=["redis"])} == {filter_corpus["bug"]}
    assert {r["id"] for r in recall(client, query="redis cache eviction", tags=["cache"])} == {
        filter_corpus["decision"],
        filter_corpus["bug"],
    }


def test_filter_by_creation_time(client: TestClient, filter_corpus: dict[str, str]) -> None:
    now = datetime.now(UTC)
    past = (now - timedelta(hours=1)).isoformat()
    future = (now + timedelta(hours=1)).isoformat()
    assert {r["id"] for r in recall(client, query="redis cache eviction", created_after=past)} == set(
        filter_corpus.values()
    )
    assert recall(client, query="redis cache eviction", created_after=future) == []
    assert recall(client, query="redis cache eviction", created_before=past) == []
    assert len(recall(client, query="redis cache eviction", created_before=future)) == 3


def test_creation_time_filter_honours_utc_offsets(client: TestClient, filter_corpus: dict[str, str]) -> None:
    now = datetime.now(UTC)
    east = timezone(timedelta(hours=5))
    west = timezone(timedelta(hours=-5))
    hour_ago_west = (now - timedelta(hours=1)).astimezone(west).isoformat()
    in_an_hour_east = (now + timedelta(hours=1)).astimezone(east).isoformat()
    assert len(recall(client, query="redis cache eviction", created_after=hour_ago_west)) == 3
    assert recall(client, query="redis cache eviction", created_after=in_an_hour_east) == []
    assert len(recall(client, query="redis cache eviction", created_before=in_an_hour_east)) == 3


def test_limit_and_query_list(client: TestClient, filter_corpus: dict[str, str]) -> None:
    assert len(recall(client, query="redis cache eviction", limit=2)) == 2
    fused = recall(client, query=["redis cache", "keys expire after one hour"], limit=100)
    assert {r["id"] for r in fused} == set(filter_corpus.values())


# -- bad input ----------------------------------------------------------------------------------

GOOD_MEMORY: dict[str, Any] = {"title": "A valid title", "content": "Valid content, long enough."}


@pytest.mark.parametrize(
    ("override", "field"),
    [
        pytest.param({"title": "abcd"}, "title", id="title-too-short"),
        pytest.param({"title": "t" * 201}, "title", id="title-too-long"),
        pytest.param({"title": "     "}, "title", id="title-blank"),
        pytest.param({"content": "too short"}, "content", id="content-too-short"),
        pytest.param({"content": "c" * 10_001}, "content", id="content-too-long"),
        pytest.param({"importance": -0.1}, "importance", id="importance-negative"),
        pytest.param({"importance": 1.5}, "importance", id="importance-above-one"),
        pytest.param({"importance": "high"}, "importance", id="importance-wrong-type"),
        pytest.param({"memory_type": "gossip"}, "memory_type", id="unknown-memory-type"),
        pytest.param({"source": "rumour"}, "source", id="unknown-source"),
        pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
        pytest.param({"scope": "../etc"}, "scope", id="scope-dotdot"),
        pytest.param({"scope": "a//b"}, "scope", id="scope-empty-segment"),
        pytest.param({"scope": "/abs/path"}, "scope", id="scope-leading-slash"),
        pytest.param({"scope": "has space"}, "scope", id="scope-space"),
        pytest.param({"scope": "s" * 201}, "scope", id="scope-too-long"),
        pytest.param({"tags": [""]}, "tags", id="empty-tag"),
        pytest.param({"title": None}, "title", id="title-null"),
        pytest.param({"thread": ""}, "thread", id="thread-empty"),
        pytest.param({"thread": "t" * 201}, "thread", id="thread-too-long"),
        pytest.param({"thread": 7}, "thread", id="thread-wrong-type"),
    ],
)
def test_memorize_rejects_bad_input_and_writes_nothing(
    client: TestClient, override: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/memories", json=GOOD_MEMORY | override)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_error"
    assert field in body["message"]
    assert stored_count(client) == 0


@pytest.mark.parametrize("missing", ["title", "content"])
def test_memorize_rejects_missing_required_field(client: TestClient, missing: str) -> None:
    body = {k: v for k, v in GOOD_MEMORY.items() if k != missing}
    response = client.post("/v1/memories", json=body)
    assert response.status_code == 422
    assert missing in response.json()["message"]
    assert stored_count(client) == 0


def test_memorize_accepts_the_boundaries(client: TestClient) -> None:
    memorize(client, title="t" * 5, content="c" * 10, importance=0.0)
    memorize(client, title="t" * 200, content="d" * 10_000, importance=1.0)
    assert stored_count(client) == 2


@pytest.mark.parametrize(
    ("override", "field"),
    [
        pytest.param({"title": "     x"}, "title", id="padded-title"),
        pytest.param({"content": "         x"}, "content", id="padded-content"),
    ],
)
def test_padding_does_not_sneak_short_text_past_validation(
    client: TestClient, override: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/memories", json=GOOD_MEMORY | override)
    assert response.status_code == 422
    assert field in response.json()["message"]
    assert stored_count(client) == 0


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{not json", id="broken"),
        pytest.param(b'{"title": "A valid title", "content": "Valid content, long enough."', id="truncated"),
    ],
)
def test_memorize_malformed_json_is_400(client: TestClient, raw: bytes) -> None:
    response = client.post("/v1/memories", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "malformed_json"
    assert "JSON" in body["message"]
    assert stored_count(client) == 0


def test_memorize_body_that_is_a_list_is_422(client: TestClient) -> None:
    response = client.post("/v1/memories", json=[GOOD_MEMORY])
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "validation_error"
    assert body["message"]
    assert stored_count(client) == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"query": "q", "limit": 0}, "limit", id="limit-zero"),
        pytest.param({"query": "q", "limit": 101}, "limit", id="limit-101"),
        pytest.param({"query": "q", "limit": "ten"}, "limit", id="limit-wrong-type"),
        pytest.param({"query": "q", "created_after": "2026-01-01T00:00:00"}, "created_after", id="naive-after"),
        pytest.param({"query": "q", "created_before": "2026-01-01T00:00:00"}, "created_before", id="naive-before"),
        pytest.param({"query": "q", "created_after": "yesterday"}, "created_after", id="not-a-date"),
        pytest.param({"query": "q", "memory_types": ["gossip"]}, "memory_types", id="unknown-type"),
        pytest.param({"query": "q", "min_relevance": 1.5}, "min_relevance", id="min-relevance"),
        pytest.param({"query": "q", "scope": "../etc"}, "scope", id="bad-scope"),
        pytest.param({"query": "q", "top_k": 3}, "top_k", id="unknown-field"),
    ],
)
def test_remember_rejects_bad_input(client: TestClient, body: dict[str, Any], field: str) -> None:
    response = client.post("/v1/remember", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    assert field in response.json()["message"]


BAD_QUERIES = [
    pytest.param(["q"] * 6, id="six-queries"),
    pytest.param("", id="empty-string"),
    pytest.param([], id="empty-list"),
    pytest.param(["ok", ""], id="empty-query-in-list"),
    pytest.param("q" * 2001, id="too-long"),
]
MISSING = object()


@pytest.mark.parametrize("query", [*BAD_QUERIES, pytest.param(MISSING, id="missing")])
def test_remember_rejects_bad_queries(client: TestClient, query: Any) -> None:
    response = client.post("/v1/remember", json={} if query is MISSING else {"query": query})
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    assert any(d["field"].startswith("query") for d in response.json()["detail"])


@pytest.mark.parametrize("query", [*BAD_QUERIES, pytest.param(MISSING, id="missing")])
def test_remember_bad_query_message_names_the_field(client: TestClient, query: Any) -> None:
    response = client.post("/v1/remember", json={} if query is MISSING else {"query": query})
    assert response.status_code == 422
    assert "query" in response.json()["message"]


@pytest.mark.parametrize(
    "query",
    ['"unterminated', "NOT AND OR", "redis*", "title:redis", "(cache", "!!!", "NEAR(redis cache)", "'; DROP TABLE x"],
)
def test_remember_survives_search_syntax_in_queries(
    client: TestClient, filter_corpus: dict[str, str], query: str
) -> None:
    response = client.post("/v1/remember", json={"query": query})
    assert response.status_code == 200, response.text
    assert isinstance(response.json()["results"], list)
    assert stored_count(client) == 3


def test_remember_malformed_json_is_400(client: TestClient) -> None:
    response = client.post("/v1/remember", content=b'{"query": ', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "malformed_json"


def test_unknown_id_is_404_with_json_error(client: TestClient) -> None:
    response = client.get("/v1/memories/does-not-exist")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    assert set(response.json()) >= {"error", "message"}


# -- health and docs ----------------------------------------------------------------------------


def test_a_by_id_miss_says_where_it_looked_and_how_to_look_elsewhere(client: TestClient) -> None:
    created = memorize(client, scope="github.com/acme/api")
    elsewhere = client.get(f"/v1/memories/{created['id']}")  # no scope named: global only
    unknown = client.get("/v1/memories/00000000-0000-4000-8000-000000000000")
    for answer, asked in ((elsewhere, created["id"]), (unknown, "00000000-0000-4000-8000-000000000000")):
        assert answer.status_code == 404
        message = answer.json()["message"]
        assert message.startswith(f"no memory with id {asked} in the global scope;")  # the same for both
        assert "naming its scope" in message
    in_project = client.get("/v1/memories/00000000-0000-4000-8000-000000000000?scope=github.com/acme/api")
    assert "in scope 'github.com/acme/api' or the global scope" in in_project.json()["message"]
    forgot = client.delete(f"/v1/memories/{created['id']}?confirm=true")
    assert forgot.status_code == 404 and "naming its scope" in forgot.json()["message"]
    short = client.get(f"/v1/memories/{created['id'][:8]}")
    assert short.status_code == 404
    assert short.json()["message"].startswith(f"'{created['id'][:8]}' is not a memory id: ids are whole UUIDs")
    assert client.get(f"/v1/memories/{created['id']}?scope=github.com/acme/api").status_code == 200


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    service = client.app.state.service  # type: ignore[attr-defined]
    # The store by a fingerprint (the CLI goes through this server only for its own store), not its path.
    fingerprint = store_fingerprint(service.settings.resolved_store_url())
    assert response.json() == {"status": "ok", "store": fingerprint}
    assert str(service.settings.data_dir) not in response.text


def test_readyz_reports_each_check(client: TestClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"store": True, "embedder": True}}


def test_readyz_is_503_when_the_store_is_gone(client: TestClient) -> None:
    app: Any = client.app
    app.state.service.store.close()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["store"] is False


def test_openapi_lists_the_v1_paths(client: TestClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/v1/memories", "/v1/memories/{memory_id}", "/v1/remember", "/healthz", "/readyz"} <= set(paths)
    assert "post" in paths["/v1/memories"]
    assert {"get", "delete"} <= set(paths["/v1/memories/{memory_id}"])
    assert "post" in paths["/v1/remember"]


# -- bulk and jobs --------------------------------------------------------------------------------


def test_bulk_memorize_stores_each_once_and_reports_the_job(client: TestClient) -> None:
    memories = [
        {"title": f"Runbook step {i}", "content": f"Step {i}: drain node-{i} before the kernel upgrade."}
        for i in range(3)
    ]
    memories.append(dict(memories[0]))  # a repeat inside the batch reinforces the first
    created = client.post("/v1/memories/bulk", json={"memories": memories})
    assert created.status_code == 201, created.text
    body = created.json()
    assert [r["outcome"] for r in body["results"]] == ["stored", "stored", "stored", "reinforced"]
    assert body["results"][3]["id"] == body["results"][0]["id"] == body["ids"][0]
    job = client.get(f"/v1/jobs/{body['job_id']}").json()
    assert (job["kind"], job["state"], job["result"]["stored"], job["result"]["reinforced"]) == (
        "memorize_bulk",
        "done",
        3,
        1,
    )
    assert stored_count(client) == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"memories": []}, "memories"),
        ({"memories": [{"title": "Fine title", "content": "Fine content here."}] * 1001}, "memories"),
        ({"memories": [{"title": "Fine title", "content": "Fine content here."}, {"title": "ab"}]}, "memories.1"),
        ({"memories": "not a list"}, "memories"),
        ({"memories": [], "extra": 1}, "extra"),
        ({}, "memories"),
    ],
)
def test_bad_bulk_input_is_refused_and_writes_nothing(client: TestClient, body: dict[str, Any], field: str) -> None:
    answer = client.post("/v1/memories/bulk", json=body)
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["message"]
    assert stored_count(client) == 0


def test_job_and_dead_letter_queries_check_their_input(client: TestClient) -> None:
    for job_id in ("job_unknown", "x" * 5000, "%00", "job with spaces"):
        missing = client.get(f"/v1/jobs/{job_id}")
        assert missing.status_code == 404, job_id
        assert missing.json()["error"] == "job_not_found"
    assert client.get("/v1/dead-letters").json() == []
    for limit in ("0", "1001", "many"):
        assert client.get("/v1/dead-letters", params={"limit": limit}).status_code == 422, limit


def test_a_memory_keeps_its_thread(client: TestClient) -> None:
    created = client.post("/v1/memories", json=GOOD_MEMORY | {"thread": "chat-2026-12-01"})
    assert created.status_code == 201, created.text
    shown = client.get(f"/v1/memories/{created.json()['id']}").json()
    assert shown["thread"] == "chat-2026-12-01"
