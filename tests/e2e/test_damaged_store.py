"""A damaged SQLite file, found when the store opens or only when a query meets the damage."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.model import Memory, new_memory_id
from tests.e2e.helpers import HivememServer, open_test_store, run_cli

NOTE = {"title": "Deploy key location", "content": "The deploy key lives in the team vault, never in git."}


def damaged_database(data_dir: Path, memories: int = 400) -> Path:
    """A store with ``memories`` memories whose interior pages are then overwritten with garbage."""
    embedder = HashEmbedder(64)
    path = data_dir / "hivemem.db"
    store = open_test_store(data_dir)
    for i in range(memories):
        content = f"Memory {i}: the service {i} owns queue {i * 7} and pages team {i % 9}."
        memory = Memory(
            id=new_memory_id(), scope="", title=f"Owner {i}", content=content, content_hash=content_hash(content)
        )
        memory.embedding = embedder.embed_passages([content])[0]
        store.put(memory)
    store.close()
    data = bytearray(path.read_bytes())
    page = 4096
    pages = len(data) // page
    assert pages > 20
    for number in range(pages // 3, pages // 3 + 6):
        data[number * page : (number + 1) * page] = bytes((number * 37 + k) % 251 for k in range(page))
    path.write_bytes(bytes(data))
    return path


def test_a_damaged_database_is_refused_at_start_with_a_way_out(dirs: tuple[Path, Path]) -> None:
    data_dir, _ = dirs
    damaged_database(data_dir)
    done = run_cli("serve", data_dir=data_dir, cwd=data_dir)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is damaged" in done.stderr
    assert ".recover" in done.stderr


def test_a_damaged_database_found_in_use_answers_503_and_takes_no_writes(dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    damaged_database(data_dir)
    server = HivememServer(data_dir, logs, HIVEMEM_SQLITE_INTEGRITY_CHECK="off")
    # Unchecked, the damage is met when the server loads its index at start: it serves, unready.
    server.start(ready=False)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            failures = [http.post("/v1/remember", json={"query": f"service {i} owns queue"}) for i in range(0, 400, 40)]
            corrupt = [f for f in failures if f.status_code != 200]
            assert corrupt, "no query met the damage"
            assert {(f.status_code, f.json()["error"]) for f in corrupt} == {(503, "store_corrupt")}
            assert ".recover" in corrupt[0].json()["message"]
            ready = http.get("/readyz")
            assert (ready.status_code, ready.json()["checks"]["store"]) == (503, False)
            write = http.post("/v1/memories", json=NOTE)
            assert (write.status_code, write.json()["error"]) == (503, "store_corrupt")
        assert "Traceback" not in server.log_text()
    finally:
        server.stop()


def test_a_zero_byte_database_is_refused_at_start_and_by_doctor(dirs: tuple[Path, Path]) -> None:
    data_dir, _ = dirs
    (data_dir / "hivemem.db").write_bytes(b"")
    for command in ("serve", "doctor"):
        done = run_cli(command, data_dir=data_dir, cwd=data_dir)
        assert done.returncode != 0, done.stdout + done.stderr
        assert "is empty (0 bytes), not a hivemem store" in done.stdout + done.stderr
    assert (data_dir / "hivemem.db").stat().st_size == 0  # nothing was written into it


def test_a_server_on_a_new_data_folder_says_its_store_is_new(dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    server = HivememServer(data_dir, logs)
    for expected in (True, False):  # the first start makes the store; the second finds it
        server.start()
        server.stop()
        serving = [line for line in server.log_text().splitlines() if "serving on" in line]
        assert ("(new: no database was there" in serving[-1]) is expected, serving


def test_an_export_that_meets_damage_ends_with_an_error_line(dirs: tuple[Path, Path]) -> None:
    data_dir, logs = dirs
    damaged_database(data_dir)
    server = HivememServer(data_dir, logs, HIVEMEM_SQLITE_INTEGRITY_CHECK="off")
    server.start(ready=False)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            exported = http.get("/v1/export")
            assert exported.status_code == 200
            lines = exported.text.splitlines()
            last = json.loads(lines[-1])
            assert (last["kind"], last["error"]) == ("error", "store_corrupt"), lines[-1]
            assert json.loads(lines[0])["kind"] == "header"
            # Imported, the cut file is refused at its error line, and nothing is written.
            into = http.post("/v1/import", content=exported.text, headers={"Content-Type": "application/x-ndjson"})
            assert into.status_code == 422 and f"line {len(lines)}" in into.json()["message"], into.text
    finally:
        server.stop()
