"""The CLI as a client: with ``hivemem serve`` running on the same store, memorize, remember, get and
forget go through it (its metrics move); with another store, or told not to, the CLI works alone;
commands that embed nothing never load the model."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from api.cli import main as cli_main
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.jobs import Job, JobKind, new_job_id
from hivemem.lazy_embedder import LazyEmbedder
from hivemem.schemas import MemoryCreate
from hivemem.token_schemas import TokenCreate
from tests.e2e.helpers import HivememServer, hivemem_command, hivemem_env, run_cli
from workers.job_board import RedisJobBoard

SCOPE = "github.com/acme/api"


def served(server: HivememServer, route: str, method: str) -> float:
    """How many requests the server answered on ``route``, by its own metrics."""
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "hivemem_http_requests_total" and s.labels["route"] == route and s.labels["method"] == method
    )


def test_cli_commands_go_through_a_server_on_the_same_store(
    server: HivememServer, data_dir: Path, tmp_path: Path
) -> None:
    port = str(server.port)

    def cli(*args: str, data: Path = data_dir, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, data_dir=data, cwd=tmp_path, HIVEMEM_PORT=port, **env)

    stored = cli(
        "memorize",
        "--json",
        "--title",
        "Release trains",
        "--content",
        "Releases leave every other Tuesday.",
        "--scope",
        SCOPE,
    )
    assert stored.returncode == 0, stored.stderr
    memory_id = json.loads(stored.stdout)["id"]
    assert served(server, "/v1/memories", "POST") == 1

    found = run_cli(
        "remember", "when do releases leave", "--scope", SCOPE, data_dir=data_dir, cwd=tmp_path, HIVEMEM_PORT=port
    )
    assert found.returncode == 0 and "Releases leave every other Tuesday." in found.stdout
    assert served(server, "/v1/remember", "POST") == 1

    shown = cli("get", memory_id, "--scope", SCOPE)
    assert json.loads(shown.stdout)["title"] == "Release trains"
    refused = cli("forget", memory_id, "--scope", SCOPE)
    # Refused by the CLI itself, naming its own flag (the API's refusal names `confirm=true`).
    assert refused.returncode == 2 and "run it again with --confirm" in refused.stderr, refused.stderr

    # Told not to, the CLI opens the store itself: the server sees nothing of it.
    alone = cli("get", memory_id, "--scope", SCOPE, HIVEMEM_SERVER_URL="off")
    assert alone.returncode == 0 and served(server, "/v1/memories/{memory_id:uuid}", "GET") == 1
    # Another store: the server on that port is not this CLI's.
    other = run_cli(
        "remember", "releases", "--scope", SCOPE, data_dir=tmp_path / "other", cwd=tmp_path, HIVEMEM_PORT=port
    )
    assert other.returncode == 0 and "no memories found" in other.stdout
    assert served(server, "/v1/remember", "POST") == 1

    jobs = cli("jobs", "--json")
    assert jobs.returncode == 0, jobs.stderr
    (memorized,) = [json.loads(line) for line in jobs.stdout.splitlines()]
    assert (memorized["kind"], memorized["state"], memorized["done"]) == ("memorize", "done", 1)
    whole = cli("jobs", memorized["id"])
    assert json.loads(whole.stdout)["result"]["items"][0]["id"] == memory_id
    assert cli("jobs", "--state", "failed").stdout == ""
    unknown = cli("jobs", "job_unknown")
    assert unknown.returncode == 2 and "job_not_found" in unknown.stderr
    assert served(server, "/v1/jobs", "GET") == 2

    gone = cli("forget", memory_id, "--confirm", "--scope", SCOPE)
    assert gone.returncode == 0 and f"forgot {memory_id}" in gone.stdout
    assert served(server, "/v1/memories/{memory_id:uuid}", "DELETE") == 1


def test_a_team_server_asks_the_cli_for_hivemem_token(data_dir: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    team = HivememServer(data_dir, logs, HIVEMEM_TEAM="true")
    team.start()
    try:
        memorize = [
            "memorize",
            "--title",
            "Release trains",
            "--content",
            "Releases leave on Tuesdays.",
            "--scope",
            SCOPE,
        ]

        def cli(**env: str) -> subprocess.CompletedProcess[str]:
            return run_cli(*memorize, data_dir=data_dir, cwd=tmp_path, HIVEMEM_SERVER_URL=team.url, **env)

        anonymous = cli()
        assert anonymous.returncode == 2
        assert "this client sends HIVEMEM_TOKEN, which is not set" in anonymous.stderr, anonymous.stderr
        refused = cli(HIVEMEM_TOKEN="hm_000000000000_not-a-live-token")
        assert refused.returncode == 2 and "the token this client sent was refused" in refused.stderr
        service = MemoryService.from_settings(Settings(data_dir=data_dir, embed_model="hash:64"))
        try:
            token = service.tokens.create(TokenCreate(name="ci", grants=[f"{SCOPE}:write"]), Caller(principal="t"))
        finally:
            service.close()
        stored = cli(HIVEMEM_TOKEN=token.token)
        assert stored.returncode == 0, stored.stderr
    finally:
        team.stop()


def test_commands_that_embed_nothing_never_load_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService.from_settings(Settings(data_dir=tmp_path, embed_model="hash:64"))
    try:
        note = MemoryCreate(title="Loaded lazily", content="The model waits for a text to embed.", scope=SCOPE)
        (result,) = service.memorize_many([note], Caller(principal="cli"))
    finally:
        service.close()
    loads: list[str] = []

    def refuse_to_load(self: LazyEmbedder) -> None:
        loads.append(self.model_id)
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(LazyEmbedder, "_model", refuse_to_load)
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    for argv in (
        ["get", result.id, "--scope", SCOPE],
        ["memories", "list", "--scope", SCOPE],
        ["export", "--scope", SCOPE],
        ["token", "list"],
        ["audit"],
        ["jobs"],
        ["forget", result.id, "--confirm", "--scope", SCOPE],
    ):
        assert cli_main(argv) == 0, argv
    assert loads == []
    capsys.readouterr()


def test_jobs_without_a_server_are_read_from_the_broker(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    board = RedisJobBoard.from_url(redis_url)
    job = Job(id=new_job_id(), kind=JobKind.INGEST, total=4)
    board.create(job)
    board.record(job.id, {"a": {"index": 0, "id": "doc-a", "outcome": "indexed"}})
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    monkeypatch.setenv("HIVEMEM_BROKER_URL", redis_url)
    capsys.readouterr()
    assert cli_main(["jobs", "--state", "running"]) == 0
    assert f"{job.id}  ingest        running      1/4" in capsys.readouterr().out
    assert cli_main(["jobs", "--limit", "0"]) == 2
    monkeypatch.delenv("HIVEMEM_BROKER_URL")
    assert cli_main(["jobs"]) == 0
    assert "no server is running" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(data_dir: Path, tmp_path: Path) -> None:
    """``hivemem … | head``: the pipe's reader is gone before the command writes (its end is
    closed before the command starts), so every write fails; the command exits as SIGPIPE would,
    without a traceback."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [*hivemem_command(), "config"],
            cwd=tmp_path,
            env=hivemem_env(data_dir, HIVEMEM_SERVER_URL="off"),
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(writer)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
