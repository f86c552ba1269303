"""``hivemem setup`` installs the client hooks and the memory rules beside the MCP entry: once, kept
with the project's own hooks and text, never duplicated, left out when asked; and what it writes
runs, as the client would run it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from api.cli import main as cli_main
from api.cli.project_files import RULES, RULES_BEGIN, RULES_END, installed_hook_events
from tests.e2e.helpers import HivememServer, hivemem_env

SCOPE = "github.com/acme/payments"
THEIR_HOOK = {"type": "command", "command": "npx prettier --write .", "timeout": 30}


def snapshot(project: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(project)): (p.read_bytes(), p.stat().st_mtime_ns) for p in project.rglob("*") if p.is_file()
    }


def test_setup_claude_code_writes_the_entry_hooks_and_rules_once_and_keeps_the_rest(env: Path, tmp_path: Path) -> None:
    project = tmp_path / "payments"
    (project / ".claude").mkdir(parents=True)
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}}), encoding="utf-8")
    settings = project / ".claude" / "settings.json"
    theirs = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PostToolUse": [{"matcher": "Edit|Write", "hooks": [THEIR_HOOK]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat NOTES.md"}]}],
        },
    }
    settings.write_text(json.dumps(theirs), encoding="utf-8")
    (project / "CLAUDE.md").write_text("# Payments\n\nRun `make test` before pushing.\n", encoding="utf-8")
    argv = ["setup", "claude-code", "--project", str(project), "--scope", SCOPE, "--url", "http://127.0.0.1:8765"]

    assert cli_main([*argv, "--no-warm"]) == 0
    config = json.loads(settings.read_text(encoding="utf-8"))
    assert config["permissions"] == theirs["permissions"]
    assert config["hooks"]["PostToolUse"] == theirs["hooks"]["PostToolUse"]
    assert config["hooks"]["SessionStart"][0] == theirs["hooks"]["SessionStart"][0]  # theirs first, then ours
    ours = installed_hook_events(settings)
    assert set(ours) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert ours["UserPromptSubmit"].endswith(f"hook prompt-submit --url http://127.0.0.1:8765 --scope {SCOPE}")
    servers = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert set(servers) == {"github", "hivemem"}
    claude_md = (project / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude_md.startswith("# Payments\n\nRun `make test` before pushing.\n\n")
    assert claude_md.count(RULES_BEGIN) == 1 and RULES in claude_md and "`handoff`" in RULES

    # A second run changes nothing, not even a file's modification time.
    before = snapshot(project)
    assert cli_main([*argv, "--no-warm"]) == 0
    assert snapshot(project) == before

    # An older rules text is updated in place, and the text around it stays.
    stale = claude_md.replace(RULES, "## Memory rules\n\nAn older version.")
    (project / "CLAUDE.md").write_text(stale + "\n## Later section\n", encoding="utf-8")
    assert cli_main([*argv, "--no-warm"]) == 0
    updated = (project / "CLAUDE.md").read_text(encoding="utf-8")
    assert updated.count(RULES_BEGIN) == updated.count(RULES_END) == 1
    assert RULES in updated and "An older version." not in updated and updated.endswith("## Later section\n")


def test_no_hooks_and_no_rules_leave_them_out(env: Path, tmp_path: Path) -> None:
    bare, hooked = tmp_path / "bare", tmp_path / "hooked"
    bare.mkdir()
    hooked.mkdir()
    assert cli_main(["setup", "claude-code", "--project", str(bare), "--no-hooks", "--no-rules", "--no-warm"]) == 0
    assert sorted(p.name for p in bare.iterdir()) == [".mcp.json"]
    assert cli_main(["setup", "claude-code", "--project", str(hooked), "--no-rules", "--no-warm"]) == 0
    assert not (hooked / "CLAUDE.md").exists() and installed_hook_events(hooked / ".claude" / "settings.json")
    # Cursor: its hooks cannot add to the agent's context, so it gets the rules file alone.
    cursor = tmp_path / "cursor"
    cursor.mkdir()
    assert cli_main(["setup", "cursor", "--project", str(cursor), "--no-warm"]) == 0
    rules = (cursor / ".cursor" / "rules" / "hivemem.mdc").read_text(encoding="utf-8")
    assert rules.startswith("---\n") and "alwaysApply: true" in rules and RULES in rules
    assert not (cursor / ".claude").exists()


def test_setup_refuses_a_settings_file_it_cannot_read_and_changes_nothing(env: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    for broken in ("{not json", json.dumps({"hooks": []}), json.dumps({"hooks": {"Stop": {"x": 1}}})):
        (project / ".claude" / "settings.json").write_text(broken, encoding="utf-8")
        assert cli_main(["setup", "claude-code", "--project", str(project), "--no-warm"]) == 2
        assert (project / ".claude" / "settings.json").read_text(encoding="utf-8") == broken


def test_the_hooks_setup_writes_run_as_the_client_runs_them(
    server: HivememServer, data_dir: Path, env: Path, tmp_path: Path
) -> None:
    project = tmp_path / "payments"
    project.mkdir()
    assert env == data_dir  # the CLI in this process works on the server's data folder
    argv = ["setup", "claude-code", "--project", str(project), "--scope", SCOPE, "--url", server.url]
    assert cli_main([*argv, "--no-warm"]) == 0
    note = {"title": "Deploys go through staging", "content": "Every deploy goes to staging first.", "scope": SCOPE}
    note["memory_type"] = "decision"
    assert httpx.post(f"{server.url}/v1/memories", json=note, timeout=60).status_code == 201
    command = installed_hook_events(project / ".claude" / "settings.json")["SessionStart"]
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({"session_id": "s", "source": "startup", "cwd": str(project)}),
        cwd=project,
        env=hivemem_env(data_dir, CLAUDE_PROJECT_DIR=str(project)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Deploys go through staging" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_doctor_says_which_hooks_are_installed_and_whether_they_reach_the_server(
    server: HivememServer, data_dir: Path, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "payments"
    project.mkdir()
    assert env == data_dir  # the CLI in this process works on the server's data folder
    cli_main(["doctor", "--project", str(project)])
    assert "ok    hooks: none in" in capsys.readouterr().out
    assert cli_main(["setup", "claude-code", "--project", str(project), "--url", server.url, "--no-warm"]) == 0
    capsys.readouterr()
    assert cli_main(["doctor", "--project", str(project)]) == 0
    said = capsys.readouterr().out
    assert f"ok    hooks: SessionStart, Stop, UserPromptSubmit installed in {project}" in said
    assert f"{server.url} answers them" in said
    server.stop()
    assert cli_main(["doctor", "--project", str(project)]) == 1
    assert "FAIL  hooks: SessionStart, Stop, UserPromptSubmit installed, but they do not reach the server" in (
        capsys.readouterr().out
    )
