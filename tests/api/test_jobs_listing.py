"""``GET /v1/jobs``: the newest jobs with their progress, filtered by state; on a team server an
admin's view (jobs carry no owner), like the dead letters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.services.memories import MemoryService
from hivemem.config import Settings
from tests.api.conftest import LOCAL_URL

SCOPE = "github.com/acme/api"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Hivemem-Scope": SCOPE}


def test_jobs_are_listed_newest_first_with_their_progress(client: TestClient) -> None:
    notes = [{"title": f"Runbook step {i}", "content": f"Step {i}: drain node-{i} first."} for i in range(3)]
    bulk = client.post("/v1/memories/bulk", json={"memories": notes}).json()
    single = client.post("/v1/memories", json={"title": "One more note", "content": "Tag releases by date."})
    assert single.status_code == 201

    jobs = client.get("/v1/jobs").json()
    assert [j["kind"] for j in jobs[:2]] == ["memorize", "memorize_bulk"]
    listed = jobs[1]
    assert listed["id"] == bulk["job_id"]
    assert (listed["state"], listed["done"], listed["total"], listed["progress"]) == ("done", 3, 3, 1.0)
    assert listed["result"] is None  # the per-item outcomes are GET /v1/jobs/{id}'s
    assert client.get(f"/v1/jobs/{bulk['job_id']}").json()["result"]["stored"] == 3

    assert [j["id"] for j in client.get("/v1/jobs", params={"limit": 1}).json()] == [jobs[0]["id"]]
    assert client.get("/v1/jobs", params={"state": "failed"}).json() == []
    assert len(client.get("/v1/jobs", params={"state": "done"}).json()) == len(jobs)
    for params in ({"state": "lost"}, {"limit": "0"}, {"limit": "1001"}, {"limit": "many"}):
        answer = client.get("/v1/jobs", params=params)
        assert answer.status_code == 422, params


@pytest.fixture
def team(tmp_path: Path) -> Iterator[tuple[MemoryService, TestClient]]:
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
        yield service, client
    service.close()


def test_on_a_team_server_only_an_admin_of_everything_lists_jobs_and_dead_letters(
    team: tuple[MemoryService, TestClient],
) -> None:
    service, client = team
    admin = service.tokens.first_admin()
    assert admin is not None
    made = client.post("/v1/tokens", json={"name": "alice", "grants": [f"{SCOPE}:admin"]}, headers=bearer(admin.token))
    alice = made.json()["token"]
    note = {"title": "Deploy rule", "content": "Deploys go out on Tuesdays.", "scope": SCOPE}
    assert client.post("/v1/memories", json=note, headers=bearer(alice)).status_code == 201

    for path in ("/v1/jobs", "/v1/dead-letters"):
        assert client.get(path).status_code == 401, path
        refused = client.get(path, headers=bearer(alice))
        assert refused.status_code == 403, path
        assert "admin on '*'" in refused.json()["message"]
        assert client.get(path, headers=bearer(admin.token)).status_code == 200, path
    assert [j["kind"] for j in client.get("/v1/jobs", headers=bearer(admin.token)).json()] == ["memorize"]


def test_an_unknown_job_is_not_found_and_the_answer_says_which_jobs_are_known(client: TestClient) -> None:
    answer = client.get("/v1/jobs/job_0123456789abcdef0123456789abcdef")
    assert answer.status_code == 404 and answer.json()["error"] == "job_not_found"
    assert "another data folder, or of a CLI call" in answer.json()["message"]
