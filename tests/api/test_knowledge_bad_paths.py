"""Paths no file can have, and URLs no parser takes, are clear refusals or document failures, never a 500."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli_main
from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import ValidationError
from hivemem.knowledge_schemas import IngestRequest
from tests.api.conftest import LOCAL_URL
from workers.documents.sources import FileAccess

HEADERS = {"X-Hivemem-Scope": "github.com/acme/docs"}


def _finished(client: TestClient, job_id: str) -> dict[str, Any]:
    while (job := client.get(f"/v1/jobs/{job_id}").json())["state"] not in ("done", "failed"):
        time.sleep(0.02)
    return dict(job)


def test_names_the_file_system_refuses_are_answered_not_crashed_on(client: TestClient) -> None:
    for path in ("/" + "a" * 300, "/tmp/" + "ä" * 200 + "/notes.md"):
        answer = client.post("/v1/knowledge/ingest", json={"paths": [path]}, headers=HEADERS)
        assert answer.status_code == 403 and answer.json()["error"] == "document_access_denied", answer.text
    # ~user of no user: accepted like a missing file, and failed as its document, saying why.
    accepted = client.post("/v1/knowledge/ingest", json={"paths": ["~no-such-user-here/notes.md"]}, headers=HEADERS)
    assert accepted.status_code == 202, accepted.text
    (item,) = _finished(client, accepted.json()["id"])["result"]["items"]
    assert item["outcome"] == "failed" and "cannot read this path" in item["error"]


def test_a_malformed_url_fails_as_its_document_and_the_job_ends_done(client: TestClient) -> None:
    accepted = client.post("/v1/knowledge/ingest", json={"paths": ["http://[::1/"]}, headers=HEADERS)
    assert accepted.status_code == 202, accepted.text
    job = _finished(client, accepted.json()["id"])
    assert job["state"] == "done", job
    (item,) = job["result"]["items"]
    assert item["outcome"] == "failed" and "not a valid URL" in item["error"]


def test_the_cli_path_reports_an_impossible_name_as_that_documents_failure(client: TestClient) -> None:
    service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
    report = service.knowledge.ingest(
        IngestRequest(paths=["/" + "a" * 300, "~no-such-user-here/notes.md"], scope="github.com/acme/docs"),
        Caller(default_scope="github.com/acme/docs"),
        FileAccess(),  # the CLI's: any local file
    )
    assert report.failed == 2 and report.indexed == 0
    assert all("cannot read this path" in f.error for f in report.failures), report.failures


def test_a_folder_with_no_document_is_a_clear_refusal_naming_what_was_left_out(
    settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "notes.odt").write_bytes(b"PK\x03\x04 an OpenDocument text")
    (folder / "plan.odt").write_bytes(b"PK\x03\x04 another")
    (folder / "Makefile").write_text("all:\n\ttrue\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    allowed = settings.model_copy(update={"knowledge_allowed_paths": (str(tmp_path),)})
    with TestClient(create_app(allowed), base_url=LOCAL_URL) as client:
        service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
        caller = Caller(default_scope="github.com/acme/docs")
        # The CLI's path (in this process) and the server's (a job) refuse alike, and index nothing.
        with pytest.raises(ValidationError) as refused:
            service.knowledge.ingest(IngestRequest(paths=[str(folder)]), caller, FileAccess())
        assert "2 files .odt; 1 file (no extension) (hivemem reads .csv, .docx" in str(refused.value)
        answer = client.post("/v1/knowledge/ingest", json={"paths": [str(folder)]}, headers=HEADERS)
        assert answer.status_code == 422, answer.text
        assert "2 files .odt" in answer.text
        answer = client.post("/v1/knowledge/ingest", json={"paths": [str(folder)], "glob": ["*.md"]}, headers=HEADERS)
        assert answer.status_code == 422 and "3 files not matching the glob" in answer.text, answer.text
        answer = client.post("/v1/knowledge/ingest", json={"paths": [str(empty)]}, headers=HEADERS)
        assert answer.status_code == 422 and "hold none" in answer.text, answer.text
        assert client.get("/v1/knowledge/sources", headers=HEADERS).json()["sources"] == []
        jobs = client.get("/v1/jobs")
        assert jobs.status_code == 200 and [j for j in jobs.json() if j["kind"] == "ingest"] == [], jobs.text


def test_files_of_formats_not_read_are_counted_in_the_summary_not_passed_over_in_silence(
    settings: Settings, tmp_path: Path, cli_alone: None, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "onboarding.md").write_text("# Onboarding\n\nNew hires get a laptop from the front desk.\n")
    (folder / "budget.odt").write_bytes(b"PK\x03\x04 an OpenDocument text")
    (folder / "roadmap.odt").write_bytes(b"PK\x03\x04 another")
    (folder / "Makefile").write_text("all:\n\ttrue\n")
    left_out = {".odt": 2, "(no extension)": 1}
    ingest = ["knowledge", "ingest", str(folder), "--scope", "github.com/acme/docs"]

    assert cli_main(ingest) == 0
    summary = capsys.readouterr().out
    assert summary.startswith("1 document: 1 indexed"), summary
    assert "\n  left out: 2 files .odt; 1 file (no extension) (hivemem reads .csv, .docx" in summary
    assert cli_main([*ingest, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["unchanged"], report["left_out"]) == (1, left_out)
    # Files a glob passes over were left out on request: not counted.
    assert cli_main([*ingest, "--glob", "*.md", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["left_out"] == {}

    # Over REST the job's first answer counts them, as it starts.
    allowed = settings.model_copy(update={"knowledge_allowed_paths": (str(tmp_path),)})
    with TestClient(create_app(allowed), base_url=LOCAL_URL) as client:
        accepted = client.post("/v1/knowledge/ingest", json={"paths": [str(folder)]}, headers=HEADERS)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["left_out"] == left_out
        (item,) = _finished(client, accepted.json()["id"])["result"]["items"]  # the one document, read before
        assert (Path(item["id"]).name, item["outcome"]) == ("onboarding.md", "unchanged")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="this system has no named pipes")
def test_a_named_pipe_and_a_name_not_in_utf8_fail_as_their_documents_and_the_rest_is_indexed(
    settings: Settings, tmp_path: Path, cli_alone: None, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "deploy.md").write_text("# Deploy\n\nShip from the release branch on Tuesdays.\n")
    # Opening a pipe for reading waits for a writer: the ingest hung here, forever.
    os.mkfifo(folder / "pipe.txt")
    # A name of Latin-1 bytes: the uri could not be stored, and the whole ingest died on it.
    latin = os.fsdecode(bytes(folder) + b"/caf\xe9.txt")
    Path(latin).write_text("Coffee notes.\n")

    assert cli_main(["knowledge", "ingest", str(folder), "--scope", "github.com/acme/docs", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["indexed"] == 1 and report["failed"] == 2
    reasons = {Path(f["source"]).name: f["error"] for f in report["failures"]}
    assert reasons == {
        "pipe.txt": "not a regular file (a named pipe, socket or device): name a document file",
        "caf?.txt": "the path is not valid UTF-8: rename the file to index it",
    }
    # Read or searched by name, the pipe is refused the same way, over HTTP too, at once.
    allowed = settings.model_copy(update={"knowledge_allowed_paths": (str(tmp_path),)})
    with TestClient(create_app(allowed), base_url=LOCAL_URL) as client:
        for command, body in (("read", {}), ("search", {"query": "notes"})):
            answer = client.post(
                f"/v1/knowledge/{command}", json={"source": str(folder / "pipe.txt"), **body}, headers=HEADERS
            )
            assert answer.status_code == 422 and "not a regular file" in answer.json()["message"], answer.text
