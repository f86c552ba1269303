"""Export and import: SQLite -> OpenSearch -> SQLite gives the same file, and bad files change nothing."""

from __future__ import annotations

import io
import json
import resource
import signal
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

import api.services.transfer as api_transfer
from api.cli import main as cli_main
from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from api.services.parts import Parts
from bench.suite.local_cluster import hivemem_command
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.errors import ValidationError
from hivemem.hashing import content_hash
from hivemem.knowledge import chunk_id
from hivemem.knowledge_schemas import KnowledgeSearchRequest, KnowledgeStoreRequest
from hivemem.model import DuplicatePolicy, Memory, MemoryState
from hivemem.schemas import LinkCreate, MemoryCreate, RecallRequest
from hivemem.token_schemas import TokenCreate
from hivemem.transfer import export_file_lines, export_lines
from tests.api.conftest import LOCAL_URL
from tests.api.test_team_acl import ServerThread
from tests.e2e.helpers import hivemem_env
from tests.opensearch_backend import OpenSearchBackend
from workers.documents.sources import FileAccess

SCOPE = "github.com/acme/api"
OTHER = "github.com/acme/web"
LOCAL = Caller(principal="admin")
HTML = b"""<!doctype html><html><head><title>Release runbook</title></head><body>
<h1>Release runbook</h1><p>Tag the release, then build the images from the tag.</p>
<h2>Rollback</h2><p>Roll back by redeploying the previous tag; never rebuild an old tag.</p></body></html>"""


def _sqlite(path: Path) -> MemoryService:
    return MemoryService.from_settings(Settings(data_dir=path, embed_model="hash:64"))


@pytest.fixture
def opensearch_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    backend: OpenSearchBackend = request.getfixturevalue("opensearch_backend")
    embedder = HashEmbedder(64)
    store = backend.open(embedder, Settings(), request.getfixturevalue("spec_validator"), needs_knn=True)
    service = MemoryService(Parts(Settings(data_dir=tmp_path / "os", embed_model="hash:64"), store, embedder))
    try:
        yield service
    finally:
        service.close()


def _note(content: str, scope: str = SCOPE, **fields: object) -> MemoryCreate:
    return MemoryCreate.model_validate({"title": content[:40], "content": content, "scope": scope} | fields)


def fill(service: MemoryService) -> None:
    """Memories in three scopes and every state, with edges, validity, provenance, access counts and
    structured details; a key's text and an uploaded HTML document."""
    alice, bob = Caller(principal="alice", default_scope=SCOPE), Caller(principal="bob", default_scope=SCOPE)
    decision = service.memorize_many(
        [_note("We deploy with blue-green switches.", tags=["deploy", "infra"], related_files=["ops/deploy.sh"])],
        alice,
    )[0].id
    service.memorize_many(
        [
            _note(
                "We deploy with canary releases now.",
                related_to=[LinkCreate(target_id=decision, relationship_type="supersedes")],
            )
        ],
        bob,
    )
    goal = service.memorize_many([_note("Goal: builds under five minutes.", memory_type="goal")], alice)[0].id
    for text in ("Layer caching saves two minutes.", "Parallel tests save a minute."):
        service.memorize_many([_note(text, related_to=[LinkCreate(target_id=goal, relationship_type="achieves")])], bob)
    service.memorize_many(
        [
            _note(
                "Lesson: cache layers and split tests.",
                memory_type="insight",
                related_to=[LinkCreate(target_id=goal, relationship_type="closes")],
            )
        ],
        alice,
    )
    failure = _note(
        "The nightly build fails on a full disk.",
        memory_type="failure",
        details={"component": "ci", "severity": "high", "error": "ENOSPC"},
        thread="ci-triage",
    )
    # Line and paragraph separators: JSON writes them unescaped, and they end no line of the file.
    pasted = _note("Pasted from a chat:\u2028use UTC in logs\u2029and ISO dates.", memory_type="preference")
    service.memorize_many([failure, pasted, _note("Everyone uses UTC in logs.", scope="")], alice)
    faded = service.memorize_many([_note("The old wiki lives on the intranet.", scope=OTHER)], bob)[0].id
    store = service.store
    store.put(replace(store.get(faded), state=MemoryState.ARCHIVED), DuplicatePolicy.OVERWRITE)
    used = service.remember(RecallRequest(query="deploy switches", scope=SCOPE), alice).results[0]
    service.get(used.id, alice, scope=SCOPE)  # read by id: used, so it has an access count
    service.knowledge.store_text(
        KnowledgeStoreRequest(key="conventions", text="Branches are named team/topic.", scope=SCOPE), alice
    )
    service.knowledge.upload("runbook.html", HTML, alice, scope=OTHER)


def export(service: MemoryService, scopes: list[str] | None = None) -> str:
    return "\n".join(service.transfer.export(LOCAL, scopes)) + "\n"


def filled_export(folder: Path, scopes: list[str] | None = None) -> str:
    """The export file of a store in ``folder`` that :func:`fill` filled."""
    source = _sqlite(folder)
    try:
        fill(source)
        return export(source, scopes)
    finally:
        source.close()


def test_sqlite_to_opensearch_to_sqlite_gives_the_same_file(tmp_path: Path, opensearch_service: MemoryService) -> None:
    first = _sqlite(tmp_path / "a")
    try:
        fill(first)
        exported = export(first)
    finally:
        first.close()
    records = [json.loads(line) for line in export_file_lines(exported)]
    kinds = [r["kind"] for r in records]
    assert kinds.count("memory") == 10 and kinds.count("source") == 2 and kinds.count("relation") >= 5
    memories = [r for r in records if r["kind"] == "memory"]
    assert {r["state"] for r in memories} == {"working", "consolidated", "archived"}
    assert any(r["valid_to"] for r in memories) and any(r["access_count"] for r in memories)
    assert {r["author"] for r in memories} == {"alice", "bob"}

    result = opensearch_service.transfer.import_lines(export_file_lines(exported), LOCAL)
    assert (result.memories, result.sources) == (10, 2) and result.scopes == ["", SCOPE, OTHER]
    from_opensearch = export(opensearch_service)
    assert from_opensearch == exported
    # The vectors were made again: the imported store recalls and searches its knowledge.
    found = opensearch_service.remember(RecallRequest(query="nightly build full disk", scope=SCOPE), LOCAL)
    assert "The nightly build fails on a full disk." in [r.content for r in found.results]
    question = KnowledgeSearchRequest(query="roll back previous tag", scope=OTHER)
    hits = opensearch_service.knowledge.search(question, LOCAL, FileAccess())
    assert hits.results and "previous tag" in hits.results[0].text

    last = _sqlite(tmp_path / "c")
    try:
        last.transfer.import_lines(export_file_lines(from_opensearch), LOCAL)
        assert export(last) == exported
        # Importing the same file again changes nothing.
        last.transfer.import_lines(export_file_lines(from_opensearch), LOCAL)
        assert export(last) == exported
        assert [e.action for e in last.store.audit_log()].count("import") == 2
        assert export(last, [OTHER]).count('"kind":"memory"') == 1
    finally:
        last.close()


def test_an_export_read_a_page_at_a_time_is_the_same_file_on_both_stores(
    tmp_path: Path, opensearch_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages of two memories: every scope and the edges between them cross page boundaries.
    first = _sqlite(tmp_path / "a")
    try:
        fill(first)
        whole = export(first)
        opensearch_service.transfer.import_lines(export_file_lines(whole), LOCAL)
        monkeypatch.setattr(api_transfer, "_PAGE", 2)
        assert export(first) == whole
        assert export(opensearch_service) == whole
    finally:
        first.close()


def test_the_export_file_is_written_in_its_order_or_not_at_all() -> None:
    memory = Memory(
        id="b", scope=SCOPE, title="A note", content="A note's text.", content_hash=content_hash("A note's text.")
    )
    with pytest.raises(ValueError, match="out of the export's order"):
        list(export_lines([memory, replace(memory, id="a")], [], []))


def test_a_bad_file_is_refused_whole_and_changes_nothing(tmp_path: Path) -> None:
    lines = export_file_lines(filled_export(tmp_path / "a"))
    target = _sqlite(tmp_path / "b")
    held = target.memorize_many([_note("We deploy with blue-green switches.")], LOCAL)[0].id
    try:
        memory = next(i for i, line in enumerate(lines) if '"kind":"memory"' in line)
        relation = next(i for i, line in enumerate(lines) if '"kind":"relation"' in line)
        wrong_hash = json.loads(lines[memory]) | {"content": "Something else entirely."}
        dangling = json.loads(lines[relation]) | {"target_id": "not-in-the-file"}
        bad_scope = json.loads(lines[memory]) | {"scope": "Not A Scope!"}
        last = max(i for i, line in enumerate(lines) if '"kind":"memory"' in line)  # a content the target lacks
        copied = json.loads(lines[last]) | {"id": "00000000-0000-4000-8000-000000000001"}
        document = next(i for i, line in enumerate(lines) if '"kind":"source"' in line)
        source = json.loads(lines[document])
        # A chunk id bound to another scope (ids are per scope): written by id, it would land on that
        # scope's chunk. And one ordinal twice.
        elsewhere = chunk_id("github.com/other/team", source["uri"], source["content_hash"], 0)
        foreign = source | {"chunks": [source["chunks"][0] | {"id": elsewhere}, *source["chunks"][1:]]}
        repeated = source | {"chunks": [source["chunks"][0], source["chunks"][0]]}
        cases = {
            "not JSON": [*lines[:3], "{broken", *lines[3:]],
            "not a hivemem-export file": lines[1:],
            "is not the hash of its content": [*lines[:memory], json.dumps(wrong_hash), *lines[memory + 1 :]],
            "not a memory of the file": [*lines[:relation], json.dumps(dangling), *lines[relation + 1 :]],
            "scope": [*lines[:memory], json.dumps(bad_scope), *lines[memory + 1 :]],
            # One content twice in one scope, under two ids: the store keeps one memory per content.
            "the file holds its content in scope": [*lines[: last + 1], json.dumps(copied), *lines[last + 1 :]],
            f"chunk {elsewhere} is not the id of chunk 0": [
                *lines[:document],
                json.dumps(foreign),
                *lines[document + 1 :],
            ],
            "chunk ordinal 0 is given twice": [*lines[:document], json.dumps(repeated), *lines[document + 1 :]],
            "does not match any of the expected tags": [*lines, '{"kind": "token", "id": "x"}'],
            "the file is empty": [],
            # Its content is held in its scope under another id.
            "already holds its content": lines,
        }
        for expected, bad in cases.items():
            with pytest.raises(ValidationError) as refused:
                target.transfer.import_lines(bad, LOCAL)
            assert expected in str(refused.value), (expected, str(refused.value))
            assert target.store.count() == 1 and [m.id for m in target.store.get_many([held])] == [held]
            assert target.store.source_scopes() == []
    finally:
        target.close()


def test_a_content_given_twice_in_a_scope_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    lines = export_file_lines(filled_export(tmp_path / "a"))
    first = next(i for i, line in enumerate(lines) if '"kind":"memory"' in line)
    twin = json.loads(lines[first]) | {"id": "00000000-0000-4000-8000-000000000002"}
    target = _sqlite(tmp_path / "b")  # empty: no store conflict to find first
    try:
        with pytest.raises(ValidationError, match=f"line {first + 2}: .*the file holds its content in scope"):
            target.transfer.import_lines([*lines[: first + 1], json.dumps(twin), *lines[first + 1 :]], LOCAL)
        assert target.store.count() == 0
    finally:
        target.close()


def test_the_cli_exports_and_imports_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = filled_export(tmp_path / "a", [SCOPE])
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "a"))
    out = tmp_path / "scope.jsonl"
    assert cli_main(["export", "--scope", SCOPE, "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "b"))
    assert cli_main(["import", str(tmp_path)]) == 2  # a folder
    assert cli_main(["import", str(tmp_path / "missing.jsonl")]) == 2
    capsys.readouterr()
    assert cli_main(["import", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["scopes"] == [SCOPE]
    assert cli_main(["export", "--scope", SCOPE]) == 0
    assert capsys.readouterr().out == expected
    # From standard input (read twice, so copied aside first), into another store.
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "c"))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(expected.encode("utf-8")), encoding="utf-8"))
    assert cli_main(["import", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == expected.count('"kind":"memory"')
    assert cli_main(["export", "--scope", SCOPE]) == 0
    assert capsys.readouterr().out == expected


def test_an_export_file_is_written_whole_or_not_at_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = _sqlite(tmp_path / "a")
    try:
        notes = [
            MemoryCreate(title=f"Runbook step {n}", content=f"Step {n} of the restore runbook. " * 12, scope=SCOPE)
            for n in range(300)
        ]
        service.memorize_many(notes, LOCAL)
        size = len(export(service, [SCOPE]).encode())
    finally:
        service.close()
    env = hivemem_env(tmp_path / "a", HIVEMEM_SERVER_URL="off")
    kept = tmp_path / "scope.jsonl"
    kept.write_text("an earlier export\n", encoding="utf-8")
    folder = tmp_path / "exports"
    folder.mkdir()

    def exporting(to: Path, max_file_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
        def limited() -> None:  # a disk that fills up halfway: writes past the limit fail (EFBIG)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

        return subprocess.run(
            [*hivemem_command(), "export", "--scope", SCOPE, "-o", str(to)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=limited if max_file_bytes else None,
            check=False,
        )

    failed = exporting(kept, max_file_bytes=size // 2)
    assert size // 2 > 65_536 and failed.returncode == 2, failed.stderr
    assert failed.stderr.strip() == f"error: File too large: {kept}"
    assert kept.read_text(encoding="utf-8") == "an earlier export\n"  # untouched, not half replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "exports", "scope.jsonl"]  # no partial file left
    refused = exporting(folder)
    assert refused.returncode == 2 and f"{folder} is a folder; give the export file's name" in refused.stderr
    nowhere = exporting(tmp_path / "missing" / "scope.jsonl")
    assert nowhere.returncode == 2 and "no folder" in nowhere.stderr and not (tmp_path / "missing").exists()
    done = exporting(kept)
    assert done.returncode == 0, done.stderr
    assert len(kept.read_bytes()) == size


def test_rest_import_takes_admin_on_every_scope_of_the_file(tmp_path: Path) -> None:
    body = filled_export(tmp_path / "a", [SCOPE])
    settings = Settings(data_dir=tmp_path / "b", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    try:
        admin = service.tokens.first_admin()
        assert admin is not None
        writer = service.tokens.create(TokenCreate(name="wes", grants=[f"{SCOPE}:write"]), LOCAL).token
        with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
            ndjson = {"Content-Type": "application/x-ndjson"}
            refused = client.post("/v1/import", content=body, headers={**ndjson, "Authorization": f"Bearer {writer}"})
            assert refused.status_code == 403 and service.store.count() == 0
            garbled = client.post(
                "/v1/import", content=b"\xff\xfe", headers={**ndjson, "Authorization": f"Bearer {admin.token}"}
            )
            assert garbled.status_code == 422
            done = client.post("/v1/import", content=body, headers={**ndjson, "Authorization": f"Bearer {admin.token}"})
            assert done.status_code == 200, done.text
            assert done.json()["memories"] == body.count('"kind":"memory"')
            again = client.get("/v1/export", params={"scope": SCOPE}, headers={"Authorization": f"Bearer {writer}"})
            assert again.status_code == 200 and again.text == body
            assert again.headers["content-type"].startswith("application/x-ndjson")
    finally:
        service.close()


def test_an_import_takes_no_memory_from_a_scope_the_caller_does_not_administer(tmp_path: Path) -> None:
    """An import writes by id: a memory of the file that this store holds in another scope would
    leave that scope. Admin on the file's scopes is not enough; it takes admin where it is now."""
    settings = Settings(data_dir=tmp_path / "b", embed_model="hash:64", team=True)
    service = MemoryService.from_settings(settings)
    try:
        admin = service.tokens.first_admin()
        assert admin is not None
        held = service.memorize_many([_note("The API gateway is Envoy, for gRPC.")], LOCAL)[0].id
        carol = service.tokens.create(TokenCreate(name="carol", grants=[f"{OTHER}:admin"]), LOCAL).token
        # Carol's file puts that memory, under its id, in the scope she administers.
        taken = service.store.get(held)
        assert taken is not None
        content = "Carol says the API gateway is nginx now."
        hijack = replace(taken, scope=OTHER, content=content, content_hash=content_hash(content))
        body = "\n".join(export_lines([hijack], [], [])) + "\n"
        ndjson = {"Content-Type": "application/x-ndjson"}
        with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
            refused = client.post("/v1/import", content=body, headers={**ndjson, "Authorization": f"Bearer {carol}"})
            assert refused.status_code == 403, refused.text
            assert f"memory {held} of the file" in refused.json()["message"]
            assert SCOPE not in refused.json()["message"]  # a scope she may not read is not named to her
            kept = service.store.get(held)
            assert kept is not None and (kept.scope, kept.content) == (SCOPE, taken.content)
            assert service.store.count() == 1
            # An admin of both scopes may move it: the import is then what the file says.
            moved = client.post(
                "/v1/import", content=body, headers={**ndjson, "Authorization": f"Bearer {admin.token}"}
            )
            assert moved.status_code == 200, moved.text
            now = service.store.get(held)
            assert now is not None and (now.scope, now.content) == (OTHER, content)
    finally:
        service.close()


def test_a_rest_export_that_fails_halfway_is_never_taken_for_a_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The body is sent as it is read: a store that fails after the first pages ends the connection
    # before the body's end, so the client gets an error, not a shorter file that would import.
    service = _sqlite(tmp_path / "a")
    try:
        service.memorize_many([_note(f"Release note number {n} says little.") for n in range(10)], LOCAL)
        monkeypatch.setattr(api_transfer, "_PAGE", 2)
        read = service.store.get_many
        calls: list[int] = []

        def failing(ids: Sequence[str], *, vectors: bool = True) -> list[Memory]:
            calls.append(len(ids))
            if len(calls) > 2:
                raise RuntimeError("the store went away")
            return read(ids, vectors=vectors)

        monkeypatch.setattr(service.store, "get_many", failing)
        with ServerThread(service) as server, pytest.raises(httpx.RemoteProtocolError, match="incomplete"):
            httpx.get(f"{server.url}/v1/export", params={"scope": SCOPE}, timeout=30)
    finally:
        service.close()
