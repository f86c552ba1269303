"""Knowledge end to end: a real server over REST and MCP, the CLI in real processes, real documents.

The server runs with the model-free embedder (the paraphrase tests with the real model are in
tests/workers/test_knowledge_model.py), so these tests find documents by their exact rare terms.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from api.cli import main as cli_main
from bench.suite.local_cluster import hivemem_command
from tests.documents import BAD_DOCUMENTS, GOOD_DOCUMENTS, lying_docx, write_bad, write_good
from tests.e2e.helpers import HivememServer, hivemem_env, run_cli, wait_for_job

pytest.importorskip("pypdfium2", reason="the ingest extra is not installed")
pytest.importorskip("fpdf", reason="fpdf2 (dev extra) makes the PDF fixtures")

SCOPE = "github.com/acme/docs"
MAX_BYTES = 2_000_000


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A folder of every good and every bad document, the bad ones in a subfolder."""
    folder = tmp_path / "library"
    write_good(folder)
    write_bad(folder / "broken", big_bytes=MAX_BYTES + 1)
    return folder


@pytest.fixture
def docs_server(tmp_path: Path, library: Path) -> Iterator[HivememServer]:
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    server = HivememServer(
        data_dir,
        logs,
        HIVEMEM_KNOWLEDGE_ALLOWED_PATHS=str(library),
        HIVEMEM_KNOWLEDGE_MAX_DOCUMENT_BYTES=str(MAX_BYTES),
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _post(http: httpx.Client, path: str, body: dict[str, Any], status: int = 200) -> Any:
    answer = http.post(path, json=body)
    assert answer.status_code == status, answer.text
    return answer.json()


def test_a_folder_of_good_and_bad_files_indexes_every_good_one_and_lists_each_bad_one(
    docs_server: HivememServer, library: Path
) -> None:
    with httpx.Client(base_url=docs_server.url, timeout=60) as http:
        accepted = _post(http, "/v1/knowledge/ingest", {"paths": [str(library)], "scope": SCOPE}, 202)
        assert accepted["kind"] == "ingest" and accepted["state"] in ("queued", "running", "done")
        assert accepted["left_out"] == {".xcf": 1}  # a format no reader takes: counted, not a failure
        job = wait_for_job(http, accepted["id"])
        assert job["state"] == "done", job
        report = job["result"]
        failed = {Path(i["id"]).name: i["error"] for i in report["items"] if i["outcome"] == "failed"}
        # Every bad file but the unsupported one (a folder walk leaves unknown extensions out) fails.
        assert set(failed) == set(BAD_DOCUMENTS) - {"drawing.xcf"}
        for name, error in failed.items():
            assert BAD_DOCUMENTS[name] in error, (name, error)
        assert report["indexed"] == len(GOOD_DOCUMENTS) and report["failed"] == len(failed)
        assert report["chunks"] > len(GOOD_DOCUMENTS)
        # Where the time went: every phase ran, and the model was called for the chunks.
        phases = report["seconds_by_phase"]
        assert set(phases) == {"read", "parse", "chunk", "embed", "write"}
        assert all(value >= 0 for value in phases.values()) and phases["embed"] > 0
        for name, (rare, _, where) in GOOD_DOCUMENTS.items():
            found = _post(http, "/v1/knowledge/search", {"query": rare, "scope": SCOPE, "limit": 3})["results"]
            assert found and Path(found[0]["source"]).name == name, (name, found)
            assert rare in found[0]["text"]
            if isinstance(where, int):
                assert found[0]["page"] == where
            elif where:
                assert where in found[0]["section"]
        listed = http.get("/v1/knowledge/sources", params={"scope": SCOPE}).json()["sources"]
        errors = {Path(s["uri"]).name: s["last_error"] for s in listed if s["last_error"]}
        assert set(errors) == set(failed)
        # Nothing of a refused document was written.
        assert all(s["chunk_count"] == 0 for s in listed if s["last_error"])


def test_http_clients_read_only_the_allowed_folders_and_never_a_folder(
    docs_server: HivememServer, library: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nThe root password is hunter2.\n")
    with httpx.Client(base_url=docs_server.url, timeout=60) as http:
        refused = http.post("/v1/knowledge/search", json={"query": "password", "source": str(outside), "scope": SCOPE})
        assert refused.status_code == 403 and "outside the folders" in refused.json()["message"]
        escaping = http.post("/v1/knowledge/read", json={"source": str(library / ".." / "secret.md"), "scope": SCOPE})
        assert escaping.status_code == 403
        missing = http.post("/v1/knowledge/read", json={"source": str(library / "nope.md"), "scope": SCOPE})
        assert missing.status_code == 404

    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(f"{docs_server.url}/mcp/{SCOPE}") as client:
            folder = await client.call_tool("knowledge", {"command": "search", "query": "x", "source": str(library)})
            seen["folder"] = " ".join(getattr(part, "text", "") for part in folder.content)
            seen["folder_error"] = folder.is_error
            read = await client.call_tool("knowledge", {"command": "read", "source": str(library / "ops.md")})
            seen["read"] = read.structured_content
            wrong = await client.call_tool("knowledge", {"command": "read", "query": "x", "source": "key:a"})
            seen["wrong"] = " ".join(getattr(part, "text", "") for part in wrong.content)

    anyio.run(main)
    assert seen["folder_error"] and "is a directory" in seen["folder"]
    assert "glimmerstone" in seen["read"]["text"] and seen["read"]["next_offset"] is None
    assert "`read` does not take query" in seen["wrong"]


def test_a_file_indexed_over_stdio_is_read_over_http_from_its_indexed_copy(tmp_path: Path) -> None:
    # An agent indexed its own file (CLI, stdio); the team server reads no local files over HTTP.
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    logs.mkdir()
    notes = tmp_path / "own" / "notes.md"
    notes.parent.mkdir()
    notes.write_text("# Deploying\n\nShip from the release branch.\n\n## Rollback\n\nRun make rollback.\n")
    indexed = run_cli("knowledge", "ingest", str(notes), "--scope", SCOPE, data_dir=data_dir, cwd=tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    live = run_cli("knowledge", "read", str(notes), "--json", data_dir=data_dir, cwd=tmp_path)
    assert live.returncode == 0, live.stderr
    server = HivememServer(data_dir, logs)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            page = _post(http, "/v1/knowledge/read", {"source": str(notes), "scope": SCOPE})
            assert page["stored"] is True and page["title"] == "Deploying"
            assert page["text"] == json.loads(live.stdout)["text"]  # the indexed copy is the text read live
            assert page["text"].startswith("Ship from the release branch.") and "Run make rollback." in page["text"]
            assert [s["section"] for s in page["sections"]] == [["Deploying"], ["Deploying", "Rollback"]]
            # Searched by name, the indexed copy answers (the server may not read the file to refresh it).
            found = _post(http, "/v1/knowledge/search", {"query": "rollback", "source": str(notes), "scope": SCOPE})
            assert found["indexed"] == "stored" and found["results"][0]["section"] == ["Deploying", "Rollback"]
            matched = _post(http, "/v1/knowledge/match", {"pattern": r"make \w+", "source": str(notes), "scope": SCOPE})
            assert [m["match"] for m in matched["matches"]] == ["make rollback"]
            notes.unlink()  # gone from the disk: still read as it was indexed
            assert _post(http, "/v1/knowledge/read", {"source": str(notes), "scope": SCOPE})["stored"] is True
            # A file indexed in no scope of the caller's is refused as before: nothing of it is read.
            other = tmp_path / "own" / "other.md"
            other.write_text("# Other\n\nNot indexed.\n")
            refused = http.post("/v1/knowledge/read", json={"source": str(other), "scope": SCOPE})
            assert refused.status_code == 403, refused.text
            elsewhere = http.post("/v1/knowledge/read", json={"source": str(notes), "scope": "github.com/acme/web"})
            assert elsewhere.status_code == 403, elsewhere.text  # indexed, but not in the scopes asked for
    finally:
        server.stop()


def test_upload_store_read_match_and_delete(docs_server: HivememServer, library: Path) -> None:
    with httpx.Client(base_url=docs_server.url, timeout=60) as http:
        pdf = (library / "reactor.pdf").read_bytes()
        uploaded = http.put("/v1/knowledge/documents", params={"name": "reactor.pdf", "scope": SCOPE}, content=pdf)
        assert uploaded.status_code == 201, uploaded.text
        assert uploaded.json()["source"] == "upload:reactor.pdf" and uploaded.json()["chunks"] == 3
        bad = http.put("/v1/knowledge/documents", params={"name": "fake.pdf", "scope": SCOPE}, content=b"not a pdf")
        assert bad.status_code == 422 and "no %PDF- header" in bad.json()["message"]

        stored = _post(
            http,
            "/v1/knowledge/store",
            {"key": "oncall", "title": "On-call", "text": "Page the flumpet team first.", "scope": SCOPE},
            201,
        )
        assert stored["source"] == "key:oncall" and stored["status"] == "indexed"
        again = _post(
            http,
            "/v1/knowledge/store",
            {"key": "oncall", "title": "On-call", "text": "Page the flumpet team first.", "scope": SCOPE},
            201,
        )
        assert again["status"] == "unchanged"
        page = _post(http, "/v1/knowledge/read", {"source": "key:oncall", "scope": SCOPE, "limit": 8})
        assert page["total_chars"] > 8 and page["next_offset"] == 8 and len(page["text"]) == 8
        # A stored document is read with its headings and pages, at offsets into its text.
        whole = _post(http, "/v1/knowledge/read", {"source": "upload:reactor.pdf", "scope": SCOPE})
        shown = [(s["section"], s["page"]) for s in whole["sections"]]
        assert shown == [(["Introduction"], 1), (["Cooling"], 2), (["Shutdown"], 3)]
        cooling = whole["sections"][1]["start"]
        assert whole["text"][cooling:].startswith("The coolant pump")
        tail = _post(
            http, "/v1/knowledge/read", {"source": "upload:reactor.pdf", "scope": SCOPE, "offset": cooling + 4}
        )
        assert [(s["start"], s["page"]) for s in tail["sections"]][:1] == [(cooling + 4, 2)]

        matched = _post(http, "/v1/knowledge/match", {"pattern": r"zorblax\w+", "scope": SCOPE})
        assert [m["match"] for m in matched["matches"]] == ["zorblaxite"] and matched["complete"]
        assert matched["matches"][0]["page"] == 2
        invalid = http.post("/v1/knowledge/match", json={"pattern": "(unclosed", "scope": SCOPE})
        assert invalid.status_code == 422
        # 23 characters that compile to a billion nodes: refused by the compile budget, and the
        # server's memory never sees it (it reached 20 GB before the kernel killed it).
        huge = http.post("/v1/knowledge/match", json={"pattern": "((a{1000}){1000}){1000}", "scope": SCOPE})
        assert huge.status_code == 422 and "too large once compiled" in huge.json()["message"], huge.text
        assert docs_server.peak_rss_bytes() < 2 * 2**30
        counted = _post(http, "/v1/knowledge/match", {"pattern": r"zorbla(x){1}\w{3,5}", "scope": SCOPE})
        assert [m["match"] for m in counted["matches"]] == ["zorblaxite"]

        _post(http, "/v1/knowledge/store", {"key": "evil", "text": "a" * 5000 + "!", "scope": SCOPE}, 201)
        slow = _post(http, "/v1/knowledge/match", {"pattern": r"(a|aa)+$", "scope": SCOPE})
        assert slow["complete"] is False  # the time budget stopped a catastrophic pattern

        removed = _post(http, "/v1/knowledge/delete", {"source": "upload:reactor.pdf", "scope": SCOPE})
        assert removed["chunks"] == 3
        after = _post(http, "/v1/knowledge/search", {"query": "zorblaxite", "scope": SCOPE})["results"]
        assert all("zorblaxite" not in hit["text"] for hit in after)
        assert (
            http.post("/v1/knowledge/delete", json={"source": "upload:reactor.pdf", "scope": SCOPE}).status_code == 404
        )


def test_a_docx_whose_headers_understate_it_is_refused_at_the_upload_limit(tmp_path: Path) -> None:
    """50 MiB of deflated zeros declared as 1 KiB: the guard inflates it a chunk at a time and stops
    past the declared size. Read whole by zipfile (as python-docx reads it), 306 KB of it took 648 MB."""
    limit = 50 * 2**20
    document = lying_docx(tmp_path / "lie.docx", packed_bytes=limit - 100_000).read_bytes()
    assert len(document) <= limit
    (tmp_path / "logs").mkdir()
    server = HivememServer(tmp_path / "data", tmp_path / "logs")  # the default limit: 50 MiB
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            params = {"name": "lie.docx", "scope": SCOPE}
            accepted = http.put("/v1/knowledge/documents", params=params, content=document)
            assert accepted.status_code == 202, accepted.text  # too large to index within the request
            job = wait_for_job(http, accepted.json()["id"])
            (outcome,) = job["result"]["items"]
            assert outcome["outcome"] == "failed" and "not what its header declares" in outcome["error"]
            assert server.peak_rss_bytes() < 2 * 2**30
            (listed,) = http.get("/v1/knowledge/sources", params={"scope": SCOPE}).json()["sources"]
            assert listed["chunk_count"] == 0 and "not what its header declares" in listed["last_error"]
    finally:
        server.stop()


def _chunks(db: Path) -> dict[str, set[str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT uri, id FROM knowledge_chunks").fetchall()
    found: dict[str, set[str]] = {}
    for uri, chunk in rows:
        found.setdefault(uri, set()).add(chunk)
    return found


def _many_documents(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for n in range(count):
        sections = "\n\n".join(
            f"## Part {p}\n\n" + f"Document {n} part {p} describes widget{n} setting {p}. " * 30 for p in range(8)
        )
        (folder / f"doc{n:03d}.md").write_text(f"# Document {n}\n\n{sections}\n", encoding="utf-8")


def test_reingest_changes_and_a_kill_halfway(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _many_documents(docs, 120)
    data, other = tmp_path / "data", tmp_path / "other"
    data.mkdir()
    other.mkdir()

    # Uninterrupted, in a data dir of its own: the chunk set to reach.
    done = run_cli("knowledge", "ingest", str(docs), "--scope", SCOPE, data_dir=other, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    expected = _chunks(other / "hivemem.db")
    assert len(expected) == 120

    # Killed with SIGKILL once part of the folder is indexed, then run again.
    process = subprocess.Popen(
        [*hivemem_command(), "knowledge", "ingest", str(docs), "--scope", SCOPE],
        env=hivemem_env(data),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db = data / "hivemem.db"
    deadline = time.monotonic() + 120
    indexed = 0
    while time.monotonic() < deadline and process.poll() is None:
        if db.exists():
            try:
                indexed = len(_chunks(db))
            except sqlite3.OperationalError:
                indexed = 0  # the schema is not there yet
        if indexed >= 10:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the ingest finished before it could be killed; give it more documents"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    partial = _chunks(db)
    assert 10 <= len(partial) < 120
    # What was written is whole documents only (each one's chunks went in one transaction).
    assert all(partial[uri] == expected[uri] for uri in partial)
    resumed = run_cli(
        "knowledge", "ingest", str(docs), "--scope", SCOPE, "--json", data_dir=data, cwd=tmp_path, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["unchanged"] == len(partial)
    assert _chunks(db) == expected

    # Unchanged: nothing indexed. One file changed: exactly its chunks replaced.
    again = run_cli("knowledge", "ingest", str(docs), "--scope", SCOPE, "--json", data_dir=data, cwd=tmp_path)
    assert (json.loads(again.stdout)["indexed"], json.loads(again.stdout)["unchanged"]) == (0, 120)
    changed = docs / "doc007.md"
    changed.write_text(changed.read_text() + "\n## Appendix\n\nA late addition about frobulators.\n")
    after = run_cli("knowledge", "ingest", str(docs), "--scope", SCOPE, "--json", data_dir=data, cwd=tmp_path)
    assert (json.loads(after.stdout)["indexed"], json.loads(after.stdout)["unchanged"]) == (1, 119)
    now = _chunks(db)
    uri = str(changed.resolve())
    assert now[uri].isdisjoint(expected[uri])
    assert {u: c for u, c in now.items() if u != uri} == {u: c for u, c in expected.items() if u != uri}


def test_the_cli_reads_a_document_with_its_headings_on_lines_of_their_own(
    cli_alone: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(
        "---\ntitle: Ops notes\n---\n# Deploying\n\nShip from the release branch.\n\n"
        "## Rollback\n\nRun make rollback.\n\n# Databases\n\nPostgres 16 on db-1.\n"
    )
    assert cli_main(["knowledge", "read", str(notes), "--scope", SCOPE]) == 0
    assert capsys.readouterr().out == (
        "## Deploying\n\nShip from the release branch.\n\n## Deploying > Rollback\n\nRun make rollback.\n\n"
        "## Databases\n\nPostgres 16 on db-1.\n"
    )
    assert cli_main(["knowledge", "read", str(notes), "--scope", SCOPE, "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert page["title"] == "Ops notes" and "Deploying" not in page["text"]  # headings are not in the text
    assert [s["section"] for s in page["sections"]] == [["Deploying"], ["Deploying", "Rollback"], ["Databases"]]


def test_the_cli_prints_each_passage_indented_under_its_citation(
    cli_alone: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(
        "---\ntitle: Ops notes\n---\n# Deploying\n\n## Rollback\n\nRun make rollback.\n\n"
        "Then check the error rate\nfor ten minutes.\n"
    )
    plain = tmp_path / "plain.txt"
    plain.write_text("Rollback drills happen monthly.\nEveryone takes a turn.\n")
    assert cli_main(["knowledge", "ingest", str(notes), str(plain), "--scope", SCOPE]) == 0
    capsys.readouterr()
    assert cli_main(["knowledge", "search", "rollback", "--scope", SCOPE]) == 0
    lines = capsys.readouterr().out.splitlines()
    cited = {line.split("  ", 1)[1]: i for i, line in enumerate(lines) if not line.startswith(" ") and line}
    assert set(cited) == {
        f"Ops notes  {notes}  [Deploying > Rollback]",
        f"Rollback drills happen monthly.  {plain}",
    }  # no section: none shown
    for citation, at in cited.items():
        passage = lines[at + 1 : min([i for i in cited.values() if i > at], default=len(lines))]
        assert passage and all(line.startswith("    ") or not line for line in passage), (citation, passage)
    assert "    for ten minutes." in lines  # a passage's later lines are indented too


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_store_reads_no_more_of_an_endless_stdin_than_its_limit(tmp_path: Path) -> None:
    # /dev/zero never ends: read whole, it filled the memory; now one character past the limit is read.
    with Path("/dev/zero").open("rb") as endless:
        done = subprocess.run(
            [*hivemem_command(), "knowledge", "store", "runbook", "--scope", SCOPE],
            stdin=endless,
            env=hivemem_env(tmp_path / "data", HIVEMEM_SERVER_URL="off"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2 and "error: text: String should have at most 100000 characters" in done.stderr


def test_sources_lists_each_document_and_says_when_there_is_none(
    cli_alone: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["knowledge", "sources", "--scope", SCOPE]) == 0
    assert capsys.readouterr().out == "no documents indexed\n"
    assert cli_main(["knowledge", "sources", "--scope", SCOPE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    stored = ["knowledge", "store", "runbook", "--text", "Restart the queue with systemctl.", "--scope", SCOPE]
    assert cli_main(stored) == 0
    capsys.readouterr()
    assert cli_main(["knowledge", "sources", "--scope", SCOPE]) == 0
    assert capsys.readouterr().out == f"{SCOPE}  key:runbook  (markdown, 1 chunk)\n"
    assert cli_main(["knowledge", "sources", "--scope", SCOPE, "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["uri"], listed["chunk_count"], listed["scope"]) == ("key:runbook", 1, SCOPE)


def test_a_5_mb_upload_is_a_job_while_eight_clients_recall(tmp_path: Path) -> None:
    """The upload is answered at once (202); recall keeps answering while the job runs, and the
    server stays under 2 GB, on the default limits. (Latency and memory figures with the real
    model: `hivemem bench http-load`, in bench/RESULTS.md.)"""
    paragraphs = Path(__file__).parents[2].joinpath("README.md").read_text().split("\n\n")
    # Sections of eight paragraphs, as a long manual has them: some 7,500 chunks, under the default 10,000.
    body = "".join(
        f"## Part {i}\n\n" + "\n\n".join(paragraphs[(i * 8 + k) % len(paragraphs)] for k in range(8)) + "\n\n"
        for i in range(2_100)
    )
    document = body.encode()[: 5 * 2**20]
    (tmp_path / "logs").mkdir()
    server = HivememServer(tmp_path / "data", tmp_path / "logs")  # on the default limits
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            _post(
                http,
                "/v1/memories",
                {"title": "Deploy path", "content": "Deploys go through staging.", "scope": SCOPE},
                201,
            )
            accepted = http.put("/v1/knowledge/documents", params={"name": "big.md", "scope": SCOPE}, content=document)
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["id"]
            statuses: list[int] = []

            def recall() -> None:
                # 25 each, not until the job ends: queries go first, so agents recalling without a
                # pause would hold the ingest back for minutes, and 200 answers show the point.
                with httpx.Client(base_url=server.url, timeout=120) as client:
                    for _ in range(25):
                        statuses.append(
                            client.post("/v1/remember", json={"query": "deploys", "scope": SCOPE}).status_code
                        )

            with ThreadPoolExecutor(max_workers=8) as pool:
                for client in [pool.submit(recall) for _ in range(8)]:
                    client.result()
            assert statuses == [200] * 200
            assert http.get(f"/v1/jobs/{job_id}").json()["state"] in {"queued", "running"}  # answered meanwhile
            job = wait_for_job(http, job_id, timeout_s=1800)
            assert job["state"] == "done" and job["result"]["indexed"] == 1 and job["result"]["chunks"] > 5_000, job
            assert server.peak_rss_bytes() < 2 * 2**30
    finally:
        server.stop()
