"""Document ingestion on real Celery workers: one task per document, a worker killed mid-job."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from api.cli.knowledge import PARTIAL
from bench.suite.local_cluster import hivemem_command
from tests.e2e.helpers import HivememServer, hivemem_env, run_cli, wait_for_job
from tests.services import CeleryWorker

pytest.importorskip("pypdfium2", reason="the ingest extra is not installed")

SCOPE = "github.com/acme/handbook"


def _documents(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for n in range(count):
        body = "\n\n".join(f"## Rule {p}\n\n" + f"Handbook page {n} rule {p} about gizmo{n}. " * 25 for p in range(6))
        (folder / f"page{n:03d}.md").write_text(f"# Page {n}\n\n{body}\n", encoding="utf-8")


@contextmanager
def beat_running(broker_url: str, data_dir: Path, logs: Path, env: dict[str, str]) -> Iterator[None]:
    """A ``hivemem beat`` that sends the reconciler every second, for the block."""
    with (logs / "beat.log").open("ab") as out:
        beat = subprocess.Popen(
            [*hivemem_command(), "beat", "--loglevel=info"],
            env=hivemem_env(data_dir, HIVEMEM_BROKER_URL=broker_url, HIVEMEM_RECONCILE_INTERVAL_S="1", **env),
            cwd=data_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield
        finally:
            beat.terminate()
            beat.wait(timeout=30)


def _chunk_ids(db: Path) -> dict[str, set[str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT uri, id FROM knowledge_chunks").fetchall()
    found: dict[str, set[str]] = {}
    for uri, chunk in rows:
        found.setdefault(uri, set()).add(chunk)
    return found


def test_an_ingest_job_survives_a_worker_killed_mid_job(
    redis_url: str, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir, logs = dirs
    docs = tmp_path / "handbook"
    _documents(docs, 60)
    env = {"HIVEMEM_BROKER_VISIBILITY_TIMEOUT_S": "3", "HIVEMEM_KNOWLEDGE_ALLOWED_PATHS": str(docs)}
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    db = data_dir / "hivemem.db"
    gateway.start()
    try:
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            accepted = http.post("/v1/knowledge/ingest", json={"paths": [str(docs)], "scope": SCOPE})
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["id"]
            assert accepted.json()["state"] == "queued"  # no worker yet: the job waits in the broker

            worker.start(concurrency=1, wait=False)
            deadline = time.monotonic() + 120
            while len(_chunk_ids(db)) < 5:
                assert time.monotonic() < deadline, "the worker never indexed a document"
                time.sleep(0.01)
            worker.kill()
            at_kill = len(_chunk_ids(db))
            assert at_kill < 60, "the worker finished before it could be killed; give it more documents"
            assert http.get(f"/v1/jobs/{job_id}").json()["state"] == "running"

            # The replacement worker gets back what kombu restores (a message the dead worker had
            # recorded as unacknowledged). A message it had popped but not yet recorded is in no
            # queue and no hash: beat's reconciler republishes it from the job board, as it does in
            # a deployment (every HIVEMEM_RECONCILE_INTERVAL_S; every second here).
            worker.start(concurrency=1)
            with beat_running(redis_url, data_dir, logs, env):
                job = wait_for_job(http, job_id, timeout_s=180)
        assert job["state"] == "done", job
        assert (job["result"]["indexed"] + job["result"]["unchanged"], job["result"]["failed"]) == (60, 0)
        assert job["result"]["seconds_by_phase"]["embed"] > 0  # the workers' own time, per phase
        chunks = _chunk_ids(db)
        assert len(chunks) == 60
        # Each document's chunks are exactly its own current set: none doubled by the redelivery.
        with sqlite3.connect(db) as conn:
            counts = dict(conn.execute("SELECT uri, chunk_count FROM knowledge_sources").fetchall())
        assert all(len(chunks[uri]) == counts[uri] for uri in chunks)
    finally:
        gateway.stop()
        worker.stop()


def test_the_cli_ingests_on_the_workers_and_sums_up_as_it_does_alone(
    redis_url: str, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir, logs = dirs
    docs = tmp_path / "handbook"
    _documents(docs, 3)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 cut off here")
    (docs / "budget.odt").write_bytes(b"PK\x03\x04 an OpenDocument text")
    worker = CeleryWorker(redis_url, data_dir, logs)
    worker.start(concurrency=1)
    try:
        ingest = ("knowledge", "ingest", str(docs), "--scope", SCOPE)
        done = run_cli(*ingest, "--json", data_dir=data_dir, cwd=tmp_path, timeout=180, HIVEMEM_BROKER_URL=redis_url)
        assert done.returncode == PARTIAL, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert (report["documents"], report["indexed"], report["failed"]) == (4, 3, 1), report
        assert [Path(f["source"]).name for f in report["failures"]] == ["broken.pdf"]
        assert report["left_out"] == {".odt": 1}
        assert "4/4 documents on the workers" in done.stderr  # the progress line, from the job board
        assert len(_chunk_ids(data_dir / "hivemem.db")) == 3  # the worker wrote them, not the CLI
        again = run_cli(*ingest, data_dir=data_dir, cwd=tmp_path, timeout=180, HIVEMEM_BROKER_URL=redis_url)
        assert again.returncode == PARTIAL, again.stdout + again.stderr
        assert again.stdout.startswith("4 documents: 0 indexed, 3 unchanged, 1 failed"), again.stdout
        assert "  failed: " in again.stdout and "  left out: 1 file .odt (hivemem reads" in again.stdout
    finally:
        worker.stop()


def test_remember_is_answered_while_an_ingest_job_runs(redis_url: str, dirs: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, logs = dirs
    docs = tmp_path / "handbook"
    _documents(docs, 80)
    env = {"HIVEMEM_KNOWLEDGE_ALLOWED_PATHS": str(docs)}
    gateway = HivememServer(data_dir, logs, HIVEMEM_BROKER_URL=redis_url, HIVEMEM_MEMORIZE_WAIT_S="20", **env)
    worker = CeleryWorker(redis_url, data_dir, logs, **env)
    gateway.start()
    worker.start(concurrency=1)
    try:
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            memory = {"title": "Gizmo rollout", "content": "Gizmo rollouts go out on Thursdays only.", "scope": SCOPE}
            assert http.post("/v1/memories", json=memory).status_code == 201
            job_id = http.post("/v1/knowledge/ingest", json={"paths": [str(docs)], "scope": SCOPE}).json()["id"]
            # Wait until the worker is inside the job, then recall while it still runs.
            deadline = time.monotonic() + 120
            while http.get(f"/v1/jobs/{job_id}").json()["progress"] == 0:
                assert time.monotonic() < deadline, "the ingest job never started"
                time.sleep(0.01)
            answered = http.post("/v1/remember", json={"query": "when do gizmo rollouts happen", "scope": SCOPE})
            during = http.get(f"/v1/jobs/{job_id}").json()
            assert answered.status_code == 200
            assert answered.json()["results"][0]["title"] == "Gizmo rollout"
            assert during["state"] == "running" and during["progress"] < 1, "the job ended before the recall"
            assert wait_for_job(http, job_id, timeout_s=180)["state"] == "done"
    finally:
        gateway.stop()
        worker.stop()


def _niceness(pid: int) -> int:
    # Field 19 of /proc/PID/stat, counted after the command name (which may hold spaces).
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_a_niced_worker_and_its_pool_run_at_the_lower_priority(redis_url: str, dirs: tuple[Path, Path]) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads niceness from /proc (Linux)")
    data_dir, logs = dirs
    worker = CeleryWorker(redis_url, data_dir, logs)
    worker.start(concurrency=1, queues="ingest", nice=7)
    try:
        assert worker.process is not None
        main = worker.process.pid
        children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
        assert children, "the prefork pool has a process"
        assert _niceness(main) == min(19, _niceness(os.getpid()) + 7)  # relative, capped at 19
        assert all(_niceness(int(child)) == _niceness(main) for child in children)
        autogroup = Path(f"/proc/{main}/autogroup")
        if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1" and autogroup.exists():
            # Its own session (the fixture starts it so, as a service manager would): the session's
            # share of the CPU is lowered too, or the niceness would count only inside it.
            assert autogroup.read_text().split()[-1] == str(_niceness(main))
    finally:
        worker.stop()
