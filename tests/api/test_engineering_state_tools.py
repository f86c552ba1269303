"""Engineering state beyond single memories: handoffs, progress that supersedes itself, the status report."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import stored_count

SCOPE = "github.com/acme/api"
HEADERS = {"X-Hivemem-Scope": SCOPE}


def _memorize(client: TestClient, **body: Any) -> str:
    answer = client.post("/v1/memories", json={"scope": SCOPE} | body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_a_saved_handoff_is_what_the_next_session_loads(client: TestClient) -> None:
    assert client.get("/v1/handoff", headers=HEADERS).json() is None
    first = client.post("/v1/handoff", json={"scope": SCOPE, "summary": "Started the import rewrite."})
    assert first.status_code == 201, first.text
    second = client.post(
        "/v1/handoff",
        json={
            "scope": SCOPE,
            "summary": "The import rewrite is half done.\nParser ported.",
            "completed": ["parser ported", "tests green"],
            "blocked": ["waiting on the schema review"],
            "next_steps": ["port the writer"],
        },
    )
    assert second.status_code == 201, second.text
    loaded = client.get("/v1/handoff", headers=HEADERS).json()
    assert loaded["id"] == second.json()["id"]
    assert loaded["summary"].startswith("The import rewrite is half done.")
    assert (loaded["completed"], loaded["in_progress"], loaded["blocked"], loaded["next_steps"]) == (
        ["parser ported", "tests green"],
        [],
        ["waiting on the schema review"],
        ["port the writer"],
    )
    memory = client.get(f"/v1/memories/{loaded['id']}", headers=HEADERS).json()
    assert memory["memory_type"] == "handoff" and memory["title"] == "Handoff: The import rewrite is half done."
    assert "Next steps:\n- port the writer" in memory["content"]
    # Another project's handoff is its own.
    assert client.get("/v1/handoff", headers={"X-Hivemem-Scope": "github.com/acme/web"}).json() is None


def test_the_largest_handoff_the_schema_admits_is_stored(client: TestClient) -> None:
    lists = {name: ["\U0001f600" * 190] * 10 for name in ("completed", "in_progress", "blocked", "next_steps")}
    answer = client.post("/v1/handoff", json={"scope": SCOPE, "summary": "\U0001f600" * 2000} | lists)
    assert answer.status_code == 201, answer.text
    loaded = client.get("/v1/handoff", headers=HEADERS).json()
    assert loaded["next_steps"] == lists["next_steps"]


def test_a_bad_handoff_is_refused_and_nothing_is_written(client: TestClient) -> None:
    before = stored_count(client)
    for body in (
        {"summary": "short"},
        {"summary": "A fine summary here.", "completed": [""]},
        {"summary": "A fine summary here.", "completed": "not a list"},
        {"summary": "A fine summary here.", "next_steps": ["x" * 191]},
        {"summary": "A fine summary here.", "next_steps": ["item"] * 11},
        {"summary": "x" * 2001},
        {"summary": "A fine summary here.", "surprise": 1},
    ):
        answer = client.post("/v1/handoff", json={"scope": SCOPE} | body)
        assert answer.status_code == 422, (body, answer.text)
    assert stored_count(client) == before


def test_a_new_progress_note_supersedes_the_features_last_one(client: TestClient) -> None:
    def progress(status: str, completion: int) -> str:
        return _memorize(
            client,
            title=f"Search rewrite {status}",
            content=f"The search rewrite is {status} at {completion} percent.",
            memory_type="progress",
            details={"feature": "search rewrite", "status": status, "completion": completion},
        )

    first = progress("in_progress", 30)
    other = _memorize(
        client,
        title="Billing export",
        content="The billing export is planned for next month.",
        memory_type="progress",
        details={"feature": "billing export", "status": "planned"},
    )
    second = progress("blocked", 60)
    old = client.get(f"/v1/memories/{first}", headers=HEADERS).json()
    assert old["valid_to"] is not None
    assert [(r["source_id"], r["type"]) for r in old["relations"] if r["type"] != "similar"] == [(second, "supersedes")]
    assert client.get(f"/v1/memories/{other}", headers=HEADERS).json()["valid_to"] is None

    status = client.get("/v1/status", headers=HEADERS).json()
    features = {f["feature"]: (f["status"], f["completion"], f["memory_id"]) for f in status["active_features"]}
    assert features == {"search rewrite": ("blocked", 60, second), "billing export": ("planned", None, other)}


def test_status_counts_types_states_and_open_failures(client: TestClient) -> None:
    for n, (component, severity) in enumerate((("billing", "high"), ("billing", "high"), ("search", "low"))):
        _memorize(
            client,
            title=f"{component} failure",
            content=f"The {component} job failed with a {severity} error, run {n}.",
            memory_type="failure",
            details={"error": "TimeoutError", "component": component, "severity": severity},
        )
    _memorize(client, title="A plain fact", content="The API answers in JSON only.")
    status = client.get("/v1/status", headers=HEADERS).json()
    assert status["scope"] == SCOPE and status["total"] == 4
    assert status["by_type"] == {"failure": {"working": 3}, "fact": {"working": 1}}
    assert status["failures_by_component"] == {"billing": {"high": 2}, "search": {"low": 1}}
    assert status["last_consolidation"] is None
    assert status["queue_depth"] == {"ingest": 0}
    assert (status["documents"], status["documents_failed"]) == (0, 0)
    stored = {"key": "runbook", "text": "Restart the queue first.", "scope": SCOPE}
    assert client.post("/v1/knowledge/store", json=stored, headers=HEADERS).status_code == 201
    bad = client.put("/v1/knowledge/documents", params={"name": "fake.pdf", "scope": SCOPE}, content=b"not a pdf")
    assert bad.status_code == 422, bad.text
    status = client.get("/v1/status", headers=HEADERS).json()
    # The refused upload is recorded with its reason (no chunks): counted as failed, not as a document.
    assert (status["documents"], status["documents_failed"], status["total"]) == (1, 1, 4)
    client.post("/v1/sleep", json={"scope": SCOPE})
    assert client.get("/v1/status", headers=HEADERS).json()["last_consolidation"] is not None
