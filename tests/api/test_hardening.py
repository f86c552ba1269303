"""Hostile and careless requests: each gets one clear error and changes nothing.

Hosts, origins and sizes (the request guard), the error model, query strings, scopes of gets and
forgets, in process; the input limits on a real server started with small ones (the request models
carry the limits in force when they are imported). More real servers over the network are in
``tests/e2e/test_exposure.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from hivemem.config import Settings
from hivemem.json_depth import MAX_JSON_DEPTH
from tests.api.conftest import LOCAL_URL
from tests.api.helpers import memorize, stored_count
from tests.e2e.helpers import HivememServer, open_test_store

GOOD = {"title": "A good title", "content": "Content that is long enough to keep."}
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
JSON = {"content-type": "application/json"}


def app_client(settings: Settings, **overrides: Any) -> TestClient:
    return TestClient(create_app(Settings.model_validate(settings.model_dump() | overrides)), base_url=LOCAL_URL)


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HivememServer]:
    """A real server with small limits, so each one is easy to pass: the body sizes are operator
    settings, the memory limits tuning parameters read when the request models are imported."""
    data, logs = tmp_path_factory.mktemp("limited-data"), tmp_path_factory.mktemp("limited-logs")
    small = {"MAX_TAGS": 2, "MAX_RELATED_FILES": 1, "MAX_DETAILS_BYTES": 64, "MAX_DETAILS_DEPTH": 2}
    small |= {"MAX_REQUEST_BYTES": 4096, "MAX_BULK_REQUEST_BYTES": 8192}
    server = HivememServer(data, logs, **{f"HIVEMEM_{name}": str(value) for name, value in small.items()})
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def limited(limited_server: HivememServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=limited_server.url, timeout=60) as client:
        yield client


def _held(server: HivememServer) -> int:
    store = open_test_store(server.data_dir)
    try:
        return store.count()
    finally:
        store.close()


# -- hosts and origins --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/remember", "/mcp", "/healthz"])
def test_a_foreign_host_is_refused_before_any_route(client: TestClient, path: str) -> None:
    answer = client.post(path, json={"query": "x"}, headers={"Host": "evil.example:8765"})
    assert answer.status_code == 421
    assert answer.json()["error"] == "host_not_allowed"
    assert "evil.example" in answer.json()["message"]


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8765@evil.example", "127.0.0.1:8765/evil", "localhost:80:80", "[::1", "127.0.0.1:http"]
)
def test_a_host_header_that_is_no_plain_authority_is_refused(client: TestClient, host: str) -> None:
    answer = client.post("/v1/remember", json={"query": "x"}, headers={"Host": host})
    assert (answer.status_code, answer.json()["error"]) == (421, "host_not_allowed"), host
    assert client.get("/healthz", headers={"Host": "127.0.0.1:8765"}).status_code == 200
    assert client.get("/healthz", headers={"Host": "[::1]:8765"}).status_code == 200


@pytest.mark.parametrize("path", ["/v1/remember", "/mcp"])
def test_a_foreign_origin_is_refused_and_writes_nothing(client: TestClient, path: str) -> None:
    answer = client.post(path, json=GOOD, headers={"Origin": "https://evil.example"})
    assert answer.status_code == 403
    assert answer.json()["error"] == "origin_not_allowed"
    blind = client.post(
        "/v1/memories",
        content=json.dumps(GOOD),
        headers={"Origin": "http://localhost:3000", "content-type": "text/plain"},
    )
    assert blind.status_code == 403  # another local page counts as foreign too
    assert stored_count(client) == 0


def test_same_origin_and_listed_origins_pass(settings: Settings) -> None:
    with app_client(settings, cors_origins=["https://app.example.com"]) as client:
        same = client.post("/v1/remember", json={"query": "x"}, headers={"Origin": LOCAL_URL})
        assert same.status_code == 200
        listed = client.post("/v1/remember", json={"query": "x"}, headers={"Origin": "https://app.example.com"})
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == "https://app.example.com"
        preflight = client.options(
            "/v1/memories",
            headers={
                "Origin": "https://app.example.com",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert preflight.status_code == 200
        assert "POST" in preflight.headers["access-control-allow-methods"]
        other = client.post("/v1/remember", json={"query": "x"}, headers={"Origin": "https://other.example.com"})
        assert other.status_code == 403


def test_allowed_hosts_name_the_public_name_and_its_subdomains(settings: Settings) -> None:
    with app_client(settings, allowed_hosts=["memory.example.com", "*.corp.example"]) as client:
        for host in ("memory.example.com", "MEMORY.example.com:443", "eu.corp.example", "127.0.0.1:8765", "localhost"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
        for host in ("example.com", "memory.example.com.evil.example", "corp.example", "[::2]:80"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 421, host


# -- sizes --------------------------------------------------------------------------------------


def test_an_oversized_body_is_413_by_its_length_and_while_it_streams(
    limited: httpx.Client, limited_server: HivememServer
) -> None:
    before = _held(limited_server)
    big = GOOD | {"content": "x" * 5000}
    declared = limited.post("/v1/memories", content=json.dumps(big), headers=JSON)
    assert declared.status_code == 413
    assert declared.json() == {"error": "payload_too_large", "message": "the request body is larger than 4096 bytes"}

    def chunks() -> Iterator[bytes]:
        body = json.dumps(big).encode()
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    streamed = limited.post("/v1/memories", content=chunks(), headers=JSON)  # no Content-Length
    assert streamed.status_code == 413
    assert streamed.json()["error"] == "payload_too_large"
    assert _held(limited_server) == before


def test_the_bulk_route_has_its_own_larger_limit(limited: httpx.Client) -> None:
    memories = [GOOD | {"content": f"Bulk memory number {i}, long enough."} for i in range(60)]
    body = json.dumps({"memories": memories})
    assert 4096 < len(body) < 8192
    assert limited.post("/v1/memories/bulk", content=body, headers=JSON).status_code == 201
    assert (
        limited.post(
            "/v1/memories", content=json.dumps(GOOD | {"details": {"x": "y" * 4100}}), headers=JSON
        ).status_code
        == 413
    )
    too_many = json.dumps({"memories": memories * 2})
    assert limited.post("/v1/memories/bulk", content=too_many, headers=JSON).status_code == 413


@pytest.mark.parametrize(
    ("override", "field", "words"),
    [
        pytest.param({"tags": ["a", "b", "c"]}, "tags", "at most 2", id="tags"),
        pytest.param({"related_files": ["a.py", "b.py"]}, "related_files", "at most 1", id="files"),
        pytest.param({"details": {"a": "x" * 80}}, "details", "at most 64 are allowed", id="details-size"),
        pytest.param({"details": {"a": {"b": {"c": 1}}}}, "details", "3 levels deep", id="details-depth"),
    ],
)
def test_limits_that_are_settings_refuse_and_write_nothing(
    limited: httpx.Client, limited_server: HivememServer, override: dict[str, Any], field: str, words: str
) -> None:
    before = _held(limited_server)
    answer = limited.post("/v1/memories", json=GOOD | override)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field
    assert words in answer.json()["message"]
    assert _held(limited_server) == before


def test_the_published_schema_carries_the_configured_limits(limited: httpx.Client) -> None:
    schema = limited.get("/openapi.json").json()["components"]["schemas"]["MemoryCreate"]["properties"]
    assert schema["tags"]["maxItems"] == 2
    assert schema["related_files"]["maxItems"] == 1
    assert "64 bytes" in schema["details"]["description"]
    assert (schema["title"]["minLength"], schema["title"]["maxLength"]) == (5, 200)
    assert schema["title"]["pattern"].startswith("^")


@pytest.mark.parametrize(
    "override",
    [
        pytest.param({"title": "Null\x00byte title"}, id="nul-title"),
        pytest.param({"content": "Bell \x07 in the content here"}, id="bell-content"),
        pytest.param({"content": "Escape \x1b[31m red content"}, id="escape-content"),
        pytest.param({"tags": ["ok", "bad\x00"]}, id="nul-tag"),
        pytest.param({"related_files": ["\t"]}, id="blank-file"),
        pytest.param({"title": "\ufeff\ufeff\ufeff\ufeff\ufeff"}, id="byte-order-marks"),
    ],
)
def test_control_characters_and_blank_text_are_refused(client: TestClient, override: dict[str, Any]) -> None:
    answer = client.post("/v1/memories", json=GOOD | override)
    assert answer.status_code == 422, answer.text
    assert "control characters" in answer.json()["message"]
    assert stored_count(client) == 0


def test_tabs_newlines_and_unicode_are_text(client: TestClient) -> None:
    created = memorize(client, title="  Ünïcode\ttitle  ", content="Line one\nline two\r\n\tindented 🐝")
    stored = client.get(f"/v1/memories/{created['id']}").json()
    assert stored["title"] == "Ünïcode\ttitle"
    assert stored["content"] == "Line one\nline two\r\n\tindented 🐝"


# -- the error model ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        pytest.param(b'{"query": "caf\xe9"}', "malformed_json", id="invalid-utf8"),
        pytest.param(b'{"query": "x", "scope": ' + b"[" * 1000 + b"]" * 1000 + b"}", "malformed_json", id="deep"),
        pytest.param(b"", "validation_error", id="empty"),
    ],
)
def test_undecodable_bodies_get_the_one_error_shape(client: TestClient, raw: bytes, code: str) -> None:
    answer = client.post("/v1/remember", content=raw, headers=JSON)
    assert answer.status_code in (400, 422)
    body = answer.json()
    assert body["error"] == code
    assert "detail" not in body or isinstance(body["detail"], list)
    assert set(body) <= {"error", "message", "field", "detail"}


def test_deeply_nested_details_are_refused_not_crashed_on(client: TestClient) -> None:
    nested: Any = "leaf"
    for _ in range(900):
        nested = {"n": nested}
    answer = client.post("/v1/memories", content=json.dumps(GOOD | {"details": nested}), headers=JSON)
    assert answer.status_code in (400, 422)
    assert answer.json()["error"] in ("malformed_json", "validation_error")
    assert stored_count(client) == 0


@pytest.mark.parametrize("path", ["/v1/remember", "/v1/memories", "/v1/memories/bulk", "/mcp"])
def test_a_body_nested_past_the_limit_is_refused_before_it_is_parsed(client: TestClient, path: str) -> None:
    deep = b'{"query": "x", "title": "A good title", "content": "Long enough content.", "details": '
    deep += b'{"n": ' * (MAX_JSON_DEPTH + 10) + b"1" + b"}" * (MAX_JSON_DEPTH + 10) + b"}"
    answer = client.post(path, content=deep, headers=JSON | {"accept": "application/json, text/event-stream"})
    assert answer.status_code == 400, answer.text
    assert answer.json() == {
        "error": "malformed_json",
        "message": f"the request body nests {MAX_JSON_DEPTH + 11} levels deep, at most {MAX_JSON_DEPTH} are allowed",
    }
    assert stored_count(client) == 0
    # Brackets inside a string nest nothing: a memory about them is a memory.
    brackets = {"title": "Bracket soup", "content": "[" * 5000 + " is how the parser test starts"}
    assert client.post("/v1/memories", json=brackets).status_code == 201


def test_an_import_line_nested_past_the_limit_is_refused_not_crashed_on(client: TestClient) -> None:
    header = json.dumps({"kind": "header", "format": "hivemem-export", "version": 1})
    deep = "[" * 50_000 + "]" * 50_000
    answer = client.post("/v1/import", content=f"{header}\n{deep}\n", headers={"content-type": "application/x-ndjson"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["message"] == (
        f"line 2: not JSON hivemem reads (it nests 50000 levels deep, at most {MAX_JSON_DEPTH} are allowed)"
    )
    assert client.get("/healthz").status_code == 200 and stored_count(client) == 0


def test_unknown_routes_and_methods_answer_json(client: TestClient) -> None:
    missing = client.get("/v2/nothing-here")
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")
    wrong = client.put(f"/v1/memories/{UNKNOWN_ID}")
    assert (wrong.status_code, wrong.json()["error"]) == (405, "method_not_allowed")
    assert wrong.headers["allow"] == "DELETE, GET, PATCH"
    bulk = client.get("/v1/memories/bulk")  # not a memory id: memory ids are UUIDs
    assert (bulk.status_code, bulk.headers["allow"]) == (405, "POST")
    assert client.get("/v1/memories/not-a-uuid").json()["error"] == "not_found"


def test_a_query_parameter_given_twice_is_refused(client: TestClient) -> None:
    answer = client.get("/v1/dead-letters?limit=abc&limit=5")
    assert answer.status_code == 422
    assert answer.json()["field"] == "limit"


@pytest.mark.parametrize("confirm", ["yes", "1", "True", "on", "false"])
def test_forget_takes_confirm_true_and_nothing_else(client: TestClient, confirm: str) -> None:
    memory_id = memorize(client, **GOOD)["id"]
    answer = client.delete(f"/v1/memories/{memory_id}", params={"confirm": confirm})
    assert (answer.status_code, answer.json()["error"]) == (400, "confirmation_required")
    assert stored_count(client) == 1


@pytest.mark.parametrize("scope", ["acme/api\n", "acme/api ", "acme//api", "acme/../api", "\tacme"])
def test_a_scope_must_match_in_full(client: TestClient, scope: str) -> None:
    for answer in (
        client.post("/v1/remember", json={"query": "x", "scope": scope}),
        client.post("/v1/memories", json=GOOD | {"scope": scope}),
        client.get(f"/v1/memories/{UNKNOWN_ID}", params={"scope": scope}),
    ):
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "scope"
    assert stored_count(client) == 0


def test_every_error_status_is_documented_with_the_error_model(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    error = spec["components"]["schemas"]["ErrorBody"]
    assert set(error["required"]) == {"error", "message"}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "403", "404", "413", "421", "422", "500", "503"):
                documented = operation["responses"].get(status)
                assert documented, f"{method.upper()} {path} does not document {status}"
                schema = documented["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, status)


# -- scopes of reads by id ----------------------------------------------------------------------


def test_get_and_forget_by_id_stay_inside_the_callers_scopes(client: TestClient) -> None:
    secret = memorize(client, **GOOD, scope="github.com/acme/beta")["id"]
    shared = memorize(client, title="Shared note", content="Every project sees this one.")["id"]
    for outside in ({}, {"scope": "github.com/acme/alpha"}):
        got = client.get(f"/v1/memories/{secret}", params=outside)
        unknown = client.get(f"/v1/memories/{UNKNOWN_ID}", params=outside)
        # The same answer as for an id that does not exist: nothing hints that it does.
        assert (
            (got.status_code, got.json()["error"])
            == (unknown.status_code, unknown.json()["error"])
            == (404, "not_found")
        )
        assert got.json()["message"] == unknown.json()["message"].replace(UNKNOWN_ID, secret)
        gone = client.delete(f"/v1/memories/{secret}", params={"confirm": "true"} | outside)
        assert gone.status_code == 404
    assert client.get(f"/v1/memories/{shared}", params={"scope": "github.com/acme/alpha"}).status_code == 200
    header = client.get(f"/v1/memories/{secret}", headers={"X-Hivemem-Scope": "github.com/acme/beta"})
    assert header.status_code == 200
    assert stored_count(client) == 2


@pytest.mark.parametrize("header", ["acme/../x", "acme/api x", "a//b"])
def test_a_malformed_scope_header_is_refused_on_rest_and_mcp(client: TestClient, header: str) -> None:
    rest = client.post("/v1/memories", json=GOOD, headers={"X-Hivemem-Scope": header})
    assert (rest.status_code, rest.json()["field"]) == (422, "X-Hivemem-Scope")
    mcp = client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"X-Hivemem-Scope": header, "Accept": "application/json, text/event-stream"},
    )
    assert (mcp.status_code, mcp.json()["error"]) == (422, "validation_error")
    assert stored_count(client) == 0


@pytest.mark.parametrize(
    ("failure", "status", "code"),
    [(MemoryError(), 503, "out_of_memory"), (RuntimeError("boom"), 500, "internal_error")],
)
def test_an_unexpected_failure_answers_the_error_body(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, failure: Exception, status: int, code: str
) -> None:
    # Running out of memory cannot be caused on demand here: the service is made to raise it.
    with TestClient(create_app(settings), base_url=LOCAL_URL, raise_server_exceptions=False) as client:
        service = client.app.state.service  # type: ignore[attr-defined]

        def fails(*_: object, **__: object) -> None:
            raise failure

        monkeypatch.setattr(service, "remember", fails)
        answer = client.post("/v1/remember", json={"query": "deploys"})
    assert answer.status_code == status
    assert answer.json()["error"] == code and "Traceback" not in answer.text
