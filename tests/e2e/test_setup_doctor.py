"""``hivemem setup`` registers a working server with MCP clients' config files (kept intact, bad ones
refused), and ``hivemem doctor`` says what works and how to fix what does not."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from api.cli import main as cli_main
from api.services.memories import MemoryService
from hivemem.config import Settings
from tests.api.test_team_acl import ServerThread
from tests.e2e.helpers import free_port, hivemem_env


def test_setup_writes_a_stdio_entry_that_a_real_client_starts(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "other-server"}}}))
    assert cli_main(["setup", "claude-code", "--project", str(project), "--scope", "github.com/acme/api"]) == 0
    assert env.is_dir()  # made, and the model loaded once
    written = json.loads((project / ".mcp.json").read_text())
    assert written["mcpServers"]["other"] == {"command": "other-server"}
    entry = written["mcpServers"]["hivemem"]
    assert entry["args"][-3:] == ["mcp", "--scope", "github.com/acme/api"]

    seen: dict[str, Any] = {}

    async def session() -> None:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=hivemem_env(env), cwd=project)
        with anyio.fail_after(60):
            async with Client(params) as client:
                seen["tools"] = {t.name for t in (await client.list_tools()).tools}
                stored = await client.call_tool("memorize", {"title": "Set up", "content": "Registered by setup."})
                seen["scope"] = stored.structured_content["scope"]

    anyio.run(session)
    assert "memorize" in seen["tools"] and seen["scope"] == "github.com/acme/api"


def test_setup_over_http_and_for_each_client(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        cli_main(["setup", "print", "--url", "http://127.0.0.1:8765/", "--token", "hm_x", "--scope", "acme/api"]) == 0
    )
    said = capsys.readouterr()
    printed = json.loads(said.out)
    assert "hm_x" not in said.out and "export HIVEMEM_TOKEN=" in said.err  # the token stays out of files
    assert printed == {
        "mcpServers": {
            "hivemem": {
                "type": "http",
                "url": "http://127.0.0.1:8765/mcp",
                "headers": {"X-Hivemem-Scope": "acme/api", "Authorization": "Bearer ${HIVEMEM_TOKEN}"},
            }
        }
    }
    # No --scope: a git project's own scope, as `hivemem mcp` would derive it there.
    project = tmp_path / "checkout"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/billing.git\n')
    assert cli_main(["setup", "cursor", "--project", str(project), "--url", "http://127.0.0.1:8765"]) == 0
    assert "scope github.com/acme/billing" in capsys.readouterr().out
    cursor = json.loads((project / ".cursor" / "mcp.json").read_text())
    assert cursor["mcpServers"]["hivemem"] == {
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"X-Hivemem-Scope": "github.com/acme/billing"},
    }
    monkeypatch.chdir(project)
    assert cli_main(["setup", "print", "--url", "http://127.0.0.1:8765"]) == 0
    assert json.loads(capsys.readouterr().out)["mcpServers"]["hivemem"]["headers"] == {
        "X-Hivemem-Scope": "github.com/acme/billing"
    }
    desktop_home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(desktop_home))
    assert cli_main(["setup", "claude-desktop", "--no-warm"]) == 0
    desktop = json.loads((desktop_home / "Claude" / "claude_desktop_config.json").read_text())
    assert desktop["mcpServers"]["hivemem"]["args"][-1] == "mcp"


def test_an_entry_written_with_url_memorizes_in_its_scope_over_http(env: Path, tmp_path: Path) -> None:
    # What the issue found: a plain /mcp entry, every memorize refused for naming no project.
    assert (
        cli_main(
            ["setup", "claude-code", "--project", str(tmp_path), "--url", "http://127.0.0.1:1", "--scope", "acme/api"]
        )
        == 0
    )
    entry = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["hivemem"]
    service = MemoryService.from_settings(Settings(data_dir=env, embed_model="hash:64", rate_limit_per_min=0))

    async def memorize(url: str, texts: list[str]) -> list[Any]:
        async with (
            httpx2.AsyncClient(headers=entry["headers"], timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return [await client.call_tool("memorize", {"title": text, "content": text + "."}) for text in texts]

    try:
        with ServerThread(service) as server:
            url = entry["url"].replace("http://127.0.0.1:1", server.url)
            one_session = anyio.run(memorize, url, ["Registered by setup", "Set up over HTTP"])
        threads = [service.store.get(r.structured_content["id"]).thread for r in one_session]
    finally:
        service.close()
    for stored in one_session:
        assert not stored.is_error, stored.content
        assert stored.structured_content["scope"] == "acme/api"
    # The calls of one working session over (stateless) HTTP are one thread.
    assert threads[0] == threads[1] and threads[0].startswith("mcp-session-")


def test_setup_refuses_what_it_cannot_write_and_changes_nothing(env: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".mcp.json").write_text("{not json")
    assert cli_main(["setup", "claude-code", "--project", str(broken), "--no-warm"]) == 2
    assert (broken / ".mcp.json").read_text() == "{not json"
    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / ".mcp.json").write_text("[1, 2]")
    assert cli_main(["setup", "claude-code", "--project", str(listed), "--no-warm"]) == 2
    folder = tmp_path / "folder"
    (folder / ".mcp.json").mkdir(parents=True)
    assert cli_main(["setup", "claude-code", "--project", str(folder), "--no-warm"]) == 2
    # A mistyped project folder is refused, not made.
    missing, plain = tmp_path / "no-such-project", tmp_path / "notes.txt"
    plain.write_text("a file")
    for client in ("claude-code", "cursor"):
        assert cli_main(["setup", client, "--project", str(missing), "--no-warm"]) == 2
        assert cli_main(["setup", client, "--project", str(plain), "--no-warm"]) == 2
    assert not missing.exists() and plain.read_text() == "a file"
    assert cli_main(["setup", "claude-desktop", "--url", "http://127.0.0.1:8765", "--no-warm"]) == 2
    assert cli_main(["setup", "print", "--url", "ftp://x", "--no-warm"]) == 2
    assert cli_main(["setup", "print", "--token", "hm_x", "--no-warm"]) == 2
    assert cli_main(["setup", "print", "--scope", "Not A Scope!", "--no-warm"]) == 2


def make_store(data: Path) -> None:
    """The store a first start makes (doctor makes none)."""
    MemoryService.from_settings(Settings(data_dir=data, embed_model="hash:64")).close()


def test_doctor_passes_on_a_working_setup_and_says_how_to_fix_a_broken_one(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_store(env)
    monkeypatch.chdir(env.parent)  # a project folder with no hooks
    assert cli_main(["doctor"]) == 0
    healthy = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in healthy] == [
        "ok    tuning",
        "ok    data folder",
        "ok    model",
        "ok    store",
        "ok    hooks",
    ]
    assert "hash-64 embeds (64 dimensions)" in healthy[2] and "holds 0 memories" in healthy[3]
    assert "no measured cosine bands" in healthy[2]  # passes, and says how to measure them
    assert cli_main(["memorize", "--title", "Release day", "--content", "We release on Thursdays."]) == 0
    capsys.readouterr()
    assert cli_main(["doctor"]) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith(" holds 1 memory")

    (env / "token.key").write_text("0" * 64)
    (env / "token.key").chmod(0o644)
    monkeypatch.setenv("HIVEMEM_BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:32")  # the store was made with hash:64
    monkeypatch.setenv("HIVEMEM_REEMBED_ON_MODEL_CHANGE", "false")
    monkeypatch.setenv("HIVEMEM_CONTEXT_WEIGHT", "5")  # serve would refuse to start
    assert cli_main(["doctor"]) == 1
    sick = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "HIVEMEM_CONTEXT_WEIGHT: Input should be less than or equal to 1" in sick["FAIL  tuning"]
    assert sick["ok    model"] and "hash-64" in sick["FAIL  store"]
    assert "start Redis or fix HIVEMEM_BROKER_URL" in sick["FAIL  broker"]
    assert "chmod 600" in sick["FAIL  token key"]


def test_doctor_checks_the_second_model(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_store(env)
    monkeypatch.setenv("HIVEMEM_SECOND_EMBED_MODEL", "hash:32")
    assert cli_main(["doctor"]) == 0
    healthy = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "hash-32 embeds (32 dimensions); 0 memories without its vector yet" in healthy["ok    second model"]

    monkeypatch.setenv("HIVEMEM_SECOND_EMBED_MODEL", "hash:3")  # too small to be a model
    assert cli_main(["doctor"]) == 1
    sick = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "check HIVEMEM_SECOND_EMBED_MODEL" in sick["FAIL  second model"]


def test_doctor_makes_nothing_and_names_the_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "not-yet"
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(data))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    assert cli_main(["doctor"]) == 0
    said = capsys.readouterr().out
    assert "does not exist yet" in said and "the first start makes it" in said
    assert not data.exists()  # neither the folder nor an empty database was made
    data.mkdir()
    assert cli_main(["doctor"]) == 0
    assert list(data.iterdir()) == []
    capsys.readouterr()
    # A broker configured without the distributed extra: the fix is the extra, not "start Redis".
    monkeypatch.setenv("HIVEMEM_BROKER_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setitem(sys.modules, "redis", None)  # what an install without the extra has
    assert cli_main(["doctor"]) == 1
    broker = next(line for line in capsys.readouterr().out.splitlines() if "broker" in line)
    assert broker.startswith("FAIL") and "pip install 'hivemem[distributed]'" in broker
    assert "start Redis" not in broker
