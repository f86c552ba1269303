"""Edges asked for on memorize, goal consolidation and sleep, over REST on the real app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from hivemem.config import Settings
from hivemem.model import DuplicatePolicy, MemoryState
from tests.api.conftest import LOCAL_URL
from tests.api.helpers import stored_count

SCOPE = "github.com/acme/api"
OTHER = "github.com/acme/secret"


def _memorize(client: TestClient, content: str, scope: str = SCOPE, **fields: Any) -> str:
    answer = client.post("/v1/memories", json={"title": content[:40], "content": content, "scope": scope} | fields)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _edges(client: TestClient, memory_id: str) -> list[tuple[str, str, str]]:
    shown = client.get(f"/v1/memories/{memory_id}", params={"scope": SCOPE}).json()
    return [(r["source_id"], r["target_id"], r["type"]) for r in shown["relations"]]


def test_memorize_adds_the_edges_it_asks_for(client: TestClient) -> None:
    decision = _memorize(client, "We deploy with blue-green switches behind the load balancer.")
    runbook = _memorize(
        client,
        "The deploy runbook: drain the blue pool, switch, watch errors for ten minutes.",
        related_to=[
            {"target_id": decision, "relationship_type": "implements", "strength": 0.9, "description": "its steps"}
        ],
    )
    assert _edges(client, runbook) == [(runbook, decision, "implements")]
    shown = client.get(f"/v1/memories/{runbook}", params={"scope": SCOPE}).json()["relations"]
    assert [(r["strength"], r["description"]) for r in shown] == [(0.9, "its steps")]
    assert _edges(client, decision) == [(runbook, decision, "implements")]


def test_an_edge_to_an_unknown_or_unreadable_memory_is_not_found_and_nothing_is_written(client: TestClient) -> None:
    hidden = _memorize(client, "Team B keeps its deploy keys in a hardware token.", scope=OTHER)
    before = stored_count(client)
    for target in ("00000000-0000-4000-8000-000000000000", hidden):
        answer = client.post(
            "/v1/memories",
            json={
                "title": "A note with a bad edge",
                "content": "This note points at a memory it cannot reach.",
                "scope": SCOPE,
                "related_to": [{"target_id": target, "relationship_type": "related_to"}],
            },
        )
        # The same answer for both: an id of a scope the caller cannot read says nothing.
        assert answer.status_code == 404, answer.text
        assert (
            answer.json()["message"]
            == f"related_to[0].target_id: no memory with id {target} in scope {SCOPE} or global"
        )
    assert stored_count(client) == before


def test_edges_that_are_consolidations_own_or_malformed_are_refused(client: TestClient) -> None:
    target = _memorize(client, "A memory to point at from elsewhere.")
    for edge in (
        {"target_id": target, "relationship_type": "derived_from"},
        {"target_id": target, "relationship_type": "sibling_of"},
        {"target_id": target, "relationship_type": "related_to", "strength": 2},
        {"relationship_type": "related_to"},
    ):
        answer = client.post(
            "/v1/memories",
            json={"title": "A bad edge", "content": "With an edge that cannot be.", "related_to": [edge]},
        )
        assert answer.status_code == 422, (edge, answer.text)


def test_a_closing_note_consolidates_the_goal_and_the_consolidation_can_be_undone(client: TestClient) -> None:
    goal = _memorize(client, "Goal: the nightly import finishes before 6 am.", memory_type="goal")
    findings = [
        _memorize(client, text, related_to=[{"target_id": goal, "relationship_type": "achieves"}])
        for text in (
            "The import spends two hours re-reading unchanged files.",
            "Skipping files whose hash is unchanged cut the import to 40 minutes.",
        )
    ]
    closing = client.post(
        "/v1/memories",
        json={
            "title": "Lesson: hash the inputs",
            "content": "Lesson: hash the inputs of a batch job before doing the work again.",
            "scope": SCOPE,
            "memory_type": "insight",
            "related_to": [{"target_id": goal, "relationship_type": "closes"}],
        },
    ).json()
    lesson = closing["id"]
    # The answer names the goal it closed and the findings it folded away.
    assert closing["outcome"] == "stored"
    assert [(g["goal_id"], sorted(g["consolidated_ids"])) for g in closing["closed_goals"]] == [
        (goal, sorted(findings))
    ]
    assert f"closed goal {goal} and consolidated its 2 working findings under this memory" in closing["said"]
    for finding in findings:
        shown = client.get(f"/v1/memories/{finding}", params={"scope": SCOPE}).json()
        assert shown["state"] == "consolidated"
    assert {(s, t) for s, t, kind in _edges(client, lesson) if kind == "derived_from"} == {
        (lesson, f) for f in findings
    }
    # Nothing is left to gather: the manual consolidation answers null.
    again = client.post(f"/v1/memories/{goal}/consolidate", headers={"X-Hivemem-Scope": SCOPE})
    assert again.status_code == 200 and again.json() is None

    record = [e for e in client.get("/v1/audit", params={"memory_id": lesson, "scope": SCOPE}).json()]
    consolidation = next(e for e in record if e["action"] == "consolidate")
    undone = client.post(f"/v1/audit/{consolidation['id']}/undo", headers={"X-Hivemem-Scope": SCOPE})
    assert undone.status_code == 200, undone.text
    assert set(undone.json()["restored"]) == {*findings, lesson}
    for finding in findings:
        assert client.get(f"/v1/memories/{finding}", params={"scope": SCOPE}).json()["state"] == "working"


def test_every_memorize_says_what_it_did(client: TestClient) -> None:
    body = {"title": "Deploy day", "content": "Deploys happen on Tuesdays.", "scope": SCOPE}
    stored = client.post("/v1/memories", json=body).json()
    assert stored["said"] == f"stored as memory {stored['id']} in scope {SCOPE}"
    again = client.post("/v1/memories", json=body).json()
    assert again["outcome"] == "reinforced"
    assert (
        again["said"]
        == f"the same fact was already in scope {SCOPE}: reinforced memory {stored['id']} instead of storing a copy"
    )
    edge = {"target_id": stored["id"], "relationship_type": "supersedes"}
    newer = client.post(
        "/v1/memories", json={**body, "content": "Deploys wait for the Thursday release train.", "related_to": [edge]}
    ).json()
    assert newer["superseded_by_links"] == [stored["id"]]
    assert newer["superseded_id"] == stored["id"]  # the answer names what was replaced, however it was
    assert newer["said"].endswith(f"; marked {stored['id']} no longer valid (supersedes; undoable)")
    assert newer["closed_goals"] is None  # what did not happen is not said


def test_consolidating_by_hand_uses_the_goal_when_no_note_closed_it(client: TestClient) -> None:
    goal = _memorize(client, "Goal: one command installs the server.", memory_type="goal")
    finding = _memorize(
        client,
        "A pipx install needs no virtual environment by hand.",
        related_to=[{"target_id": goal, "relationship_type": "achieves"}],
    )
    answer = client.post(f"/v1/memories/{goal}/consolidate", headers={"X-Hivemem-Scope": SCOPE})
    assert answer.status_code == 200, answer.text
    assert answer.json()["parent_id"] == goal and answer.json()["source_ids"] == [finding]
    assert answer.json()["audit_id"]
    not_a_goal = client.post(f"/v1/memories/{finding}/consolidate", headers={"X-Hivemem-Scope": SCOPE})
    assert not_a_goal.status_code == 409 and not_a_goal.json()["error"] == "not_a_goal"
    unknown = client.post(
        "/v1/memories/00000000-0000-4000-8000-000000000000/consolidate", headers={"X-Hivemem-Scope": SCOPE}
    )
    assert unknown.status_code == 404


@pytest.fixture
def exact_only_client(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """A server that resolves exact duplicates only: sleep's own clusters, which write-time
    resolution by meaning would have folded as they came."""
    monkeypatch.setenv("HIVEMEM_RESOLUTION_NEIGHBOURS", "0")
    with TestClient(create_app(settings), base_url=LOCAL_URL) as answer:
        yield answer


def test_sleep_dry_run_reports_the_clusters_and_writes_nothing(exact_only_client: TestClient) -> None:
    client = exact_only_client
    notes = [
        "Flaky test: test_upload times out when the CI runner is busy; rerun fixes it.",
        "Flaky test: test_upload times out when the CI runner is busy, a rerun fixes it.",
        "Flaky test: test_upload times out when CI runners are busy; rerunning fixes it.",
    ]
    ids = [_memorize(client, text) for text in notes]
    _memorize(client, "The staging database is reset every Sunday night.")
    before = stored_count(client)
    dry = client.post("/v1/sleep", json={"scope": SCOPE, "dry_run": True, "threshold": 0.8})
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True and dry.json()["candidates"] == 4
    [cluster] = dry.json()["consolidations"]
    assert sorted(cluster["source_ids"]) == sorted(ids) and cluster["audit_id"] is None
    assert stored_count(client) == before

    done = client.post("/v1/sleep", json={"scope": SCOPE, "threshold": 0.8}).json()
    [made] = done["consolidations"]
    assert stored_count(client) == before + 1 and made["audit_id"]
    insight = client.get(f"/v1/memories/{made['parent_id']}", params={"scope": SCOPE}).json()
    assert insight["memory_type"] == "insight" and "test_upload" in insight["content"]
    bad = client.post("/v1/sleep", json={"scope": SCOPE, "threshold": 3})
    assert bad.status_code == 422


def _fade(client: TestClient, memory_id: str, days: int = 400) -> None:
    """Make a memory as a year of nobody recalling it leaves it: created long ago, never accessed."""
    store = client.app.state.service.store  # type: ignore[attr-defined]
    stored = store.get(memory_id)
    then = stored.created_at - timedelta(days=days)
    store.put(replace(stored, created_at=then, updated_at=then, importance=0.2), DuplicatePolicy.OVERWRITE)


def test_sleep_archives_what_has_faded_and_a_dry_run_only_says_what_it_would(client: TestClient) -> None:
    faded = _memorize(client, "The old build server was called hamster and ran Jenkins.")
    fresh = _memorize(client, "Builds run on the shared CI runners of the platform team.")
    _fade(client, faded)

    dry = client.post("/v1/sleep", json={"scope": SCOPE, "dry_run": True})
    assert dry.status_code == 200, dry.text
    [foreseen] = dry.json()["archived"]
    assert foreseen["id"] == faded and foreseen["memory_type"] == "fact" and foreseen["strength"] < 0.05
    assert foreseen["title"].startswith("The old build server")
    # Looked at in the store: a read by id is a use, and a used memory is not faded any more.
    store = client.app.state.service.store  # type: ignore[attr-defined]
    assert store.get(faded).state.value == "working"

    alone = client.post("/v1/sleep", json={"scope": SCOPE, "archive": False}).json()
    assert alone["archived"] == []
    assert store.get(faded).state.value == "working"

    done = client.post("/v1/sleep", json={"scope": SCOPE}).json()
    assert [m["id"] for m in done["archived"]] == [faded] and done["dry_run"] is False
    states = {i: client.get(f"/v1/memories/{i}", params={"scope": SCOPE}).json()["state"] for i in (faded, fresh)}
    assert states == {faded: "archived", fresh: "working"}
    trail = client.get("/v1/audit", params={"memory_id": faded, "scope": SCOPE})
    [record] = [e for e in trail.json() if e["action"] == "archive"]
    undone = client.post(f"/v1/audit/{record['id']}/undo")
    assert undone.status_code == 200, undone.text
    assert client.get(f"/v1/memories/{faded}", params={"scope": SCOPE}).json()["state"] == "working"
    # Taken back out by hand, it counts as used now: the next pass leaves it alone.
    assert client.post("/v1/sleep", json={"scope": SCOPE}).json()["archived"] == []
    assert client.post("/v1/sleep", json={"scope": SCOPE, "archive": "yes"}).status_code == 422


def test_the_cli_links_on_memorize_consolidates_a_goal_and_sleeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from api.cli import main

    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")

    def cli_json(*args: str) -> Any:
        assert main(list(args)) == 0
        return json.loads(capsys.readouterr().out)

    goal = cli_json(
        "memorize", "--json", "--title", "Goal: a green CI", "--content", "Goal: every CI run green on main.",
        "--type", "goal", "--scope", SCOPE,
    )  # fmt: skip
    finding = cli_json(
        "memorize", "--json", "--title", "Flaky upload test",
        "--content", "test_upload waited on a sleep; it waits on the file now.",
        "--scope", SCOPE, "--related-to", f"achieves:{goal['id']}",
    )  # fmt: skip
    plan = cli_json("memory", "consolidate", goal["id"], "--scope", SCOPE)
    assert plan["parent_id"] == goal["id"] and plan["source_ids"] == [finding["id"]]
    report = cli_json("memory", "sleep-consolidate", "--scope", SCOPE, "--dry-run", "--min-size", "2")
    assert report["dry_run"] is True and report["scope"] == SCOPE and report["archived"] == []
    whole = cli_json("sleep", "--scope", SCOPE, "--dry-run")
    assert whole["dry_run"] is True and whole["archived"] == [] and whole["consolidations"] == []
    newer = cli_json(
        "memorize", "--json", "--title", "Upload test fixed",
        "--content", "test_upload waits on the file, no sleep left in it.",
        "--scope", SCOPE, "--related-to", f"supersedes:{finding['id']}",
    )  # fmt: skip
    assert main(["remember", "test_upload waits", "--scope", SCOPE, "--limit", "5"]) == 0
    lines = {line.split("  (")[1] for line in capsys.readouterr().out.splitlines() if "  (" in line}
    # The text output says which result is history, as the JSON's valid_to and state do.
    assert any(f"{finding['id']}, superseded " in line and line.endswith(", consolidated)") for line in lines)
    assert f"fact, {SCOPE}, {newer['id']})" in lines
    with pytest.raises(SystemExit) as usage:
        main(
            [
                "memorize",
                "--json",
                "--title",
                "A title here",
                "--content",
                "Some content for it.",
                "--related-to",
                "achieves",
            ]
        )
    assert usage.value.code == 2
    assert "TYPE:ID" in capsys.readouterr().err


def test_recall_finds_archived_memories_only_when_asked(client: TestClient) -> None:
    memory_id = _memorize(client, "The legacy queue was drained by the cron job nightly.")
    service = client.app.state.service  # type: ignore[attr-defined]
    stored = service.store.get(memory_id)
    service.store.put(replace(stored, state=MemoryState.ARCHIVED), DuplicatePolicy.OVERWRITE)
    query = {"query": "legacy queue cron", "scope": SCOPE}
    assert [r["id"] for r in client.post("/v1/remember", json=query).json()["results"]] == []
    found = client.post("/v1/remember", json=query | {"states": ["archived"]}).json()["results"]
    assert [(r["id"], r["state"]) for r in found] == [(memory_id, "archived")]
    both = client.post("/v1/remember", json=query | {"states": ["working", "archived"]}).json()["results"]
    assert [r["id"] for r in both] == [memory_id]
    for bad in ([], ["deleted"], "archived"):
        assert client.post("/v1/remember", json=query | {"states": bad}).status_code == 422
