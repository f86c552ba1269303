"""Concurrent writers: two processes on one SQLite file, and many threads through one service."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate
from tests.e2e.helpers import HivememServer, hivemem_env

DISTINCT_PER_WORKER = 200
SHARED_PER_WORKER = 20
SHARED_SCOPE = "github.com/acme/shared"
SHARED_CONTENT = "Both workers write this exact sentence into the same scope at the same time."

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    from api.services.memories import MemoryService
    from hivemem.config import Settings
    from hivemem.schemas import MemoryCreate

    name, store_url, barrier, plan = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4])
    service = MemoryService.from_settings(Settings(store_url=store_url, embed_model="hash:64"))
    try:
        (barrier / f"ready-{name}").touch()
        while not (barrier / "go").exists():
            time.sleep(0.005)
        out = []
        every = plan["distinct"] // plan["shared"]
        for i in range(plan["distinct"]):
            result = service.memorize(MemoryCreate(
                title=f"Worker {name} note {i}",
                content=f"Worker {name} wrote distinct note number {i} about topic {i * 7}.",
                scope=f"github.com/acme/{name}" if i % 2 else "",
            ))
            out.append(["distinct", result.id, result.outcome.value])
            if i % every == 0:
                result = service.memorize(MemoryCreate(
                    title=f"Shared fact from {name}", content=plan["content"], scope=plan["scope"],
                ))
                out.append(["shared", result.id, result.outcome.value])
        print(json.dumps(out))
    finally:
        service.close()
    """
)
PLAN = json.dumps(
    {"distinct": DISTINCT_PER_WORKER, "shared": SHARED_PER_WORKER, "content": SHARED_CONTENT, "scope": SHARED_SCOPE}
)


def test_two_processes_write_one_database(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    store_url = f"sqlite:///{db}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")

    workers = {
        name: subprocess.Popen(
            [sys.executable, str(script), name, store_url, str(barrier), PLAN],
            env=hivemem_env(tmp_path / "data"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("w1", "w2")
    }
    outputs: dict[str, list[list[str]]] = {}
    try:
        deadline = time.monotonic() + 300
        while not all((barrier / f"ready-{n}").exists() for n in workers):
            assert time.monotonic() < deadline, "workers did not start"
            for name, process in workers.items():
                if process.poll() is not None:
                    pytest.fail(f"{name} died before the start:\n{process.communicate()[1]}")
            time.sleep(0.01)
        (barrier / "go").touch()
        for name, process in workers.items():
            stdout, stderr = process.communicate(timeout=90)
            assert process.returncode == 0, f"{name} failed:\n{stderr}"
            outputs[name] = json.loads(stdout)
    finally:
        for process in workers.values():
            if process.poll() is None:
                process.kill()
            process.communicate()  # closes the pipes of a worker that died, too

    distinct_ids = [row[1] for out in outputs.values() for row in out if row[0] == "distinct"]
    shared = [(row[1], row[2]) for out in outputs.values() for row in out if row[0] == "shared"]
    assert len(distinct_ids) == 2 * DISTINCT_PER_WORKER
    assert len(set(distinct_ids)) == 2 * DISTINCT_PER_WORKER
    assert all(row[2] == "stored" for out in outputs.values() for row in out if row[0] == "distinct")
    assert len(shared) == 2 * SHARED_PER_WORKER
    assert len({memory_id for memory_id, _ in shared}) == 1, "the shared content was stored more than once"
    assert Counter(outcome for _, outcome in shared) == {"stored": 1, "reinforced": 2 * SHARED_PER_WORKER - 1}

    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 2 * DISTINCT_PER_WORKER + 1

    service = MemoryService.from_settings(Settings(store_url=store_url, embed_model="hash:64"))
    try:
        assert service.store.count() == 2 * DISTINCT_PER_WORKER + 1
        for memory_id in [*distinct_ids, shared[0][0]]:
            assert service.store.get(memory_id).id == memory_id
        assert service.store.get(shared[0][0]).scope == SHARED_SCOPE
        # Every reinforcement counted: resolution and write are one atomic step, across processes.
        assert service.store.get(shared[0][0]).access_count == 2 * SHARED_PER_WORKER - 1
    finally:
        service.close()


def test_threads_memorizing_the_same_content_make_one_memory(settings: Settings) -> None:
    service = MemoryService.from_settings(settings)
    try:
        request = MemoryCreate(
            title="Concurrent duplicate", content="Eight threads store this at once.", scope="github.com/acme/api"
        )
        start = threading.Barrier(8)
        results: list[tuple[str, str]] = []
        errors: list[BaseException] = []
        guard = threading.Lock()

        def write() -> None:
            try:
                start.wait(timeout=10)
                result = service.memorize(request)
                with guard:
                    results.append((result.id, result.outcome.value))
            except BaseException as exc:
                with guard:
                    errors.append(exc)

        threads = [threading.Thread(target=write) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        assert len({memory_id for memory_id, _ in results}) == 1
        assert Counter(outcome for _, outcome in results) == {"stored": 1, "reinforced": 7}
        assert service.store.count() == 1
        assert service.store.get(results[0][0]).access_count == 7
    finally:
        service.close()


def test_a_forget_that_answered_is_never_undone_by_a_racing_edit(server: HivememServer) -> None:
    """Each round an edit and a forget of one memory start together over HTTP. Whichever order they
    run in, once the forget has answered 200 the memory is gone: from the store, the export and
    recall (an edit read before the forget used to write it back, 10 rounds of 24)."""
    rounds = 24
    with httpx.Client(base_url=server.url, timeout=60) as http:
        ids = []
        for i in range(rounds):
            body = {"title": f"Rotation note {i}", "content": f"The staging certificate of node {i} rotates quarterly."}
            answer = http.post("/v1/memories", json=body)
            assert answer.status_code == 201, answer.text
            ids.append(answer.json()["id"])

        def race(memory_id: str) -> tuple[int, int]:
            start = threading.Barrier(2)
            codes: dict[str, int] = {}

            def edit() -> None:
                start.wait()
                edit_body = {"content": f"Edited while forgotten: {memory_id} rotates monthly now."}
                codes["edit"] = http.patch(f"/v1/memories/{memory_id}", json=edit_body).status_code

            def forget() -> None:
                start.wait()
                codes["forget"] = http.delete(f"/v1/memories/{memory_id}", params={"confirm": "true"}).status_code

            threads = [threading.Thread(target=edit), threading.Thread(target=forget)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return codes["edit"], codes["forget"]

        outcomes = Counter()
        for memory_id in ids:
            edit_code, forget_code = race(memory_id)
            assert edit_code in (200, 404) and forget_code in (200, 404), (edit_code, forget_code)
            outcomes[(edit_code, forget_code)] += 1
            if forget_code == 200:
                assert http.get(f"/v1/memories/{memory_id}").status_code == 404, outcomes
        export = http.get("/v1/export").text
        recalled = http.post("/v1/remember", json={"query": "staging certificate rotates", "limit": 50}).json()
    assert not any(memory_id in export for memory_id in ids), outcomes
    assert recalled["results"] == [], outcomes
