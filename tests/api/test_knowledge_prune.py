"""Pruning: the documents indexed from a folder whose files are gone leave the index, nothing else does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli_main
from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.knowledge_schemas import IngestRequest
from tests.api.conftest import LOCAL_URL
from workers.documents.sources import FileAccess

SCOPE = "github.com/acme/docs"
HEADERS = {"X-Hivemem-Scope": SCOPE}


def _write(path: Path, heading: str, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {heading}\n\n{body}\n", encoding="utf-8")
    return path


def _uris(client: TestClient) -> set[str]:
    return {source["uri"] for source in client.get("/v1/knowledge/sources", headers=HEADERS).json()["sources"]}


def test_prune_removes_only_the_documents_whose_files_are_gone(settings: Settings, tmp_path: Path) -> None:
    handbook = tmp_path / "allowed" / "handbook"
    kept = _write(handbook / "onboarding.md", "Onboarding", "New hires get a laptop from the front desk.")
    deleted = _write(handbook / "vpn.md", "VPN", "The VPN gateway moved to vpn2.example.com in March.")
    nested = _write(handbook / "old" / "pager.md", "Pager", "Pager duty rotates every Monday at noon.")
    moved = _write(handbook / "travel.md", "Travel", "Book trains through the travel desk, not online.")
    beside = _write(tmp_path / "allowed" / "elsewhere" / "notes.md", "Notes", "Lunch is served at half past noon.")
    allowed = settings.model_copy(update={"knowledge_allowed_paths": (str(tmp_path / "allowed"),)})
    with TestClient(create_app(allowed), base_url=LOCAL_URL) as client:
        service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
        caller = Caller(default_scope=SCOPE)
        service.knowledge.ingest(IngestRequest(paths=[str(handbook), str(beside)]), caller, FileAccess())
        stored = client.post(
            "/v1/knowledge/store", json={"key": "faq", "text": "# FAQ\n\nAsk in the help channel."}, headers=HEADERS
        )
        assert stored.status_code == 201, stored.text
        before = _uris(client)
        assert len(before) == 6

        deleted.unlink()
        nested.unlink()
        nested.parent.rmdir()
        moved.rename(handbook / "travel-policy.md")  # moved within the folder: its old path is gone
        gone = sorted(str(p.resolve()) for p in (deleted, nested, moved))

        dry = client.post("/v1/knowledge/prune", json={"folders": [str(handbook)], "dry_run": True}, headers=HEADERS)
        assert dry.status_code == 200, dry.text
        assert dry.json()["dry_run"] is True
        assert sorted(r["source"] for r in dry.json()["removed"]) == gone
        assert _uris(client) == before  # a dry run removes nothing

        done = client.post("/v1/knowledge/prune", json={"folders": [str(handbook)]}, headers=HEADERS)
        assert done.status_code == 200, done.text
        assert sorted(r["source"] for r in done.json()["removed"]) == gone
        assert all(r["chunks"] >= 1 and r["scope"] == SCOPE for r in done.json()["removed"])
        # The other files of the folder, a folder beside it and text stored under a key stay.
        assert _uris(client) == before - set(gone)
        assert {str(kept.resolve()), str(beside.resolve()), "key:faq"} <= _uris(client)
        found = client.post("/v1/knowledge/search", json={"query": "VPN gateway moved"}, headers=HEADERS).json()
        assert str(deleted.resolve()) not in {hit["source"] for hit in found["results"]}
        again = client.post("/v1/knowledge/prune", json={"folders": [str(handbook)]}, headers=HEADERS)
        assert again.json()["removed"] == []


def test_a_prune_that_names_no_folder_or_one_outside_the_allowed_ones_changes_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "allowed" / "handbook"
    page = _write(folder / "vpn.md", "VPN", "The VPN gateway moved to vpn2.example.com in March.")
    outside = tmp_path / "private"
    outside.mkdir()
    allowed = settings.model_copy(update={"knowledge_allowed_paths": (str(tmp_path / "allowed"),)})
    with TestClient(create_app(allowed), base_url=LOCAL_URL) as client:
        service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
        service.knowledge.ingest(IngestRequest(paths=[str(folder)]), Caller(default_scope=SCOPE), FileAccess())
        page.unlink()
        a_file = _write(folder / "readme.md", "Readme", "Read me first.")
        for name in (str(a_file), "handbook", "/" + "a" * 300, "~no-such-user-here/docs"):
            # Each of a request's folders is checked before anything is removed.
            answer = client.post("/v1/knowledge/prune", json={"folders": [str(folder), name]}, headers=HEADERS)
            assert answer.status_code in (403, 422), answer.text
        refused = client.post("/v1/knowledge/prune", json={"folders": [str(outside)]}, headers=HEADERS)
        assert refused.status_code == 403 and refused.json()["error"] == "document_access_denied", refused.text
        not_folder = client.post("/v1/knowledge/prune", json={"folders": [str(a_file)]}, headers=HEADERS)
        assert not_folder.status_code == 422 and "is not a folder" in not_folder.json()["message"]
        assert _uris(client) == {str(page.resolve())}
        nothing_there = client.post("/v1/knowledge/prune", json={"folders": [str(folder / "typo")]}, headers=HEADERS)
        assert nothing_there.status_code == 200 and nothing_there.json()["removed"] == []
        other_scope = client.post(
            "/v1/knowledge/prune", json={"folders": [str(folder)]}, headers={"X-Hivemem-Scope": "github.com/acme/web"}
        )
        assert other_scope.json()["removed"] == [] and _uris(client) == {str(page.resolve())}


def test_ingest_with_prune_from_the_cli_keeps_a_folder_and_its_index_alike(
    tmp_path: Path, cli_alone: None, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "handbook"
    first = _write(folder / "onboarding.md", "Onboarding", "New hires get a laptop from the front desk.")
    second = _write(folder / "vpn.md", "VPN", "The VPN gateway moved to vpn2.example.com in March.")
    ingest = ["knowledge", "ingest", str(folder), "--scope", SCOPE, "--json"]
    assert cli_main(ingest) == 0
    capsys.readouterr()

    second.unlink()
    assert cli_main(["knowledge", "sources", "--scope", SCOPE]) == 0
    listing = capsys.readouterr().out
    assert f"{second.resolve()}  (markdown, 1 chunk, its file is gone (knowledge prune))" in listing
    assert f"{first.resolve()}  (markdown, 1 chunk)\n" in listing
    assert cli_main(["knowledge", "prune", str(folder), "--scope", SCOPE, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith(f"would remove 1 document whose files are gone\n  {second.resolve()}")
    assert cli_main([*ingest, "--prune"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["unchanged"], report["pruned"]) == (1, [str(second.resolve())])

    first.unlink()  # the folder is empty now: nothing to index, and its last document goes
    assert cli_main([*ingest, "--prune"]) == 0
    assert json.loads(capsys.readouterr().out)["pruned"] == [str(first.resolve())]
    assert cli_main(["knowledge", "sources", "--scope", SCOPE]) == 0
    assert capsys.readouterr().out.strip() == "no documents indexed"
    # A folder gone whole takes its documents with it.
    _write(folder / "guide.md", "Guide", "Ask the platform team before adding a queue.")
    assert cli_main(ingest) == 0
    capsys.readouterr()
    (folder / "guide.md").unlink()
    folder.rmdir()
    assert cli_main(["knowledge", "prune", str(folder), "--scope", SCOPE, "--json"]) == 0
    assert [r["source"] for r in json.loads(capsys.readouterr().out)["removed"]] == [str(folder / "guide.md")]
    # Without a folder among the paths there is nothing to prune: refused, saying so.
    assert cli_main(["knowledge", "ingest", str(first), "--scope", SCOPE, "--prune"]) == 2
    assert "--prune removes the documents of folders" in capsys.readouterr().err
