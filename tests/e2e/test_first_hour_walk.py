"""A team's first hour, walked as a new user would: setup in a real project, a first token for a
teammate, and this machine's hooks and CLI still working; the files the team commits hold no
path of this machine and no secret."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

from api.cli.project_files import installed_hook_events
from tests.e2e.helpers import HivememServer, hivemem_env, run_cli

SCOPE = "github.com/acme/payments"
COMMITTED = (".mcp.json", ".cursor/mcp.json", ".claude/settings.json", "CLAUDE.md", ".cursor/rules/hivemem.mdc")


def git_checkout(folder: Path) -> Path:
    """A real git checkout of the project at ``folder`` (its remote gives the scope)."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", f"https://{SCOPE}.git"], check=True)
    return folder


def run_hook(command: str, project: Path, data_dir: Path, port: int) -> dict[str, object]:
    """The installed hook command, run as Claude Code runs it: a shell, the event's JSON on stdin."""
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({"session_id": "s", "source": "startup", "cwd": str(project)}),
        cwd=project,
        env=hivemem_env(data_dir, CLAUDE_PROJECT_DIR=str(project), HIVEMEM_PORT=str(port)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def assert_refused_without_a_token(url: str) -> None:
    deadline = time.monotonic() + 60  # a backstop only: the condition ends the wait
    while httpx.get(f"{url}/v1/memories", params={"scope": SCOPE}, timeout=30).status_code != 401:
        assert time.monotonic() < deadline, "the server still lets a request without a token in"
        time.sleep(0.05)


def test_a_first_token_leaves_this_machines_hooks_and_cli_working_and_commits_no_machine_path(
    server: HivememServer, data_dir: Path, tmp_path: Path
) -> None:
    project = git_checkout(tmp_path / "payments")
    port = str(server.port)
    for client in ("claude-code", "cursor"):
        setup = run_cli(
            "setup", client, "--project", str(project), "--scope", SCOPE, "--no-warm",
            data_dir=data_dir, cwd=project, HIVEMEM_PORT=port,
        )  # fmt: skip
        assert setup.returncode == 0, setup.stderr
    assert "keep `hivemem serve` running" in run_cli(
        "setup", "claude-code", "--project", str(project), "--scope", SCOPE, "--no-warm",
        data_dir=data_dir, cwd=project, HIVEMEM_PORT=port,
    ).stdout  # fmt: skip
    stored = run_cli(
        "memorize", "--title", "Deploys go through staging", "--content", "Every deploy goes to staging first.",
        "--type", "decision", "--scope", SCOPE, data_dir=data_dir, cwd=project, HIVEMEM_PORT=port,
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    # A person reads what was done, in one line (`--json` prints the whole answer).
    assert stored.stdout.startswith("stored as memory ") and stored.stdout.count("\n") == 1, stored.stdout

    created = run_cli(
        "token", "create", "bob", "--grant", "github.com/acme/billing:write", data_dir=data_dir, cwd=project
    )
    assert created.returncode == 0, created.stderr
    assert "this machine's CLI and hooks keep working" in created.stderr
    local = data_dir / "local.token"
    assert stat.S_IMODE(local.stat().st_mode) == 0o600
    # The server now asks for a token (it looks again within a second of the CLI's making one):
    # one without is refused, this machine's own is not.
    assert_refused_without_a_token(server.url)

    hook = installed_hook_events(project / ".claude" / "settings.json")["SessionStart"]
    briefing = run_hook(hook, project, data_dir, server.port)
    assert "Deploys go through staging" in json.dumps(briefing)
    recalled = run_cli(
        "remember", "how do we deploy?", "--scope", SCOPE, data_dir=data_dir, cwd=project, HIVEMEM_PORT=port
    )
    assert recalled.returncode == 0, recalled.stderr
    assert "Deploys go through staging" in recalled.stdout

    # The project's documents are named by their path in it, and a teammate reads their own copy.
    runbook = project / "docs" / "runbook.md"
    runbook.parent.mkdir()
    runbook.write_text("# Runbook\n\nRestart the payment worker with make restart.\n", encoding="utf-8")
    indexed = run_cli("knowledge", "ingest", "docs", data_dir=data_dir, cwd=project, HIVEMEM_PORT=port)
    assert indexed.returncode == 0, indexed.stderr
    listed = run_cli("knowledge", "sources", data_dir=data_dir, cwd=project, HIVEMEM_PORT=port).stdout
    assert f"{SCOPE}  repo:docs/runbook.md  (markdown" in listed, listed
    teammate = git_checkout(tmp_path / "bob" / "payments-clone")
    (teammate / "docs").mkdir()
    (teammate / "docs" / "runbook.md").write_text("# Runbook\n\nRestart it with make bounce.\n", encoding="utf-8")
    read = run_cli("knowledge", "read", "repo:docs/runbook.md", data_dir=data_dir, cwd=teammate, HIVEMEM_PORT=port)
    assert "make bounce" in read.stdout, read.stderr

    machine = {str(tmp_path), str(Path(sys.executable).parent), sys.prefix, os.path.expanduser("~")}
    assert not [m for m in machine if m in listed], listed
    for name in COMMITTED:
        text = (project / name).read_text(encoding="utf-8")
        assert not [m for m in machine if m in text], f"{name} names a path of this machine:\n{text}"
        assert "hm_" not in text, name


def test_setup_with_a_token_writes_a_reference_and_the_hook_reads_it_from_the_environment(
    server: HivememServer, data_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "billing"
    project.mkdir()
    setup = run_cli(
        "setup", "claude-code", "--project", str(project), "--scope", SCOPE, "--url", server.url,
        "--token", "hm_not_written", "--no-warm", data_dir=data_dir, cwd=project,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["hivemem"]
    assert entry["headers"]["Authorization"] == "Bearer ${HIVEMEM_TOKEN}"
    assert "hm_not_written" not in (project / ".mcp.json").read_text()
    assert "export HIVEMEM_TOKEN=" in setup.stderr
