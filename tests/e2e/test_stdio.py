"""Real processes without a server: MCP over stdio (``hivemem mcp``) and the one-shot CLI commands."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import anyio
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from api.main import create_app
from hivemem.config import Settings
from tests.api.conftest import LOCAL_URL
from tests.e2e.helpers import free_port, hivemem_command, hivemem_env, run_cli, run_cli_json

WIDGETS = "github.com/acme/widgets"


def stdio_params(data_dir: Path, cwd: Path, *args: str) -> StdioServerParameters:
    command, *prefix = hivemem_command()
    return StdioServerParameters(command=command, args=[*prefix, "mcp", *args], env=hivemem_env(data_dir), cwd=cwd)


def test_mcp_stdio_scope_comes_from_the_git_remote(data_dir: Path, git_checkout: Path) -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(60):
            await session()

    async def session() -> None:
        async with Client(stdio_params(data_dir, git_checkout)) as client:
            seen["tools"] = {t.name for t in (await client.list_tools()).tools}
            seen["instructions"] = client.instructions

            created = await client.call_tool(
                "memorize",
                {
                    "title": "Widget rendering quirk",
                    "content": "Widgets render twice in dev because of React strict mode; not a bug.",
                    "source": "user_confirmed",
                },
            )
            assert not created.is_error, created.content
            seen["id"] = created.structured_content["id"]
            seen["job_id"] = created.structured_content["job_id"]

            found = await client.call_tool("remember", {"query": "widgets render twice strict mode"})
            assert not found.is_error, found.content
            seen["found"] = found.structured_content["results"]

            refused = await client.call_tool("forget", {"id": seen["id"]})
            seen["refused"] = refused.is_error

            forgot = await client.call_tool("forget", {"id": seen["id"], "confirm": True})
            assert not forgot.is_error, forgot.content

            after = await client.call_tool("remember", {"query": "widgets render twice strict mode"})
            seen["after"] = [r["id"] for r in after.structured_content["results"]]

    anyio.run(main)
    assert seen["tools"] == {"memorize", "remember", "job", "forget", "memory", "knowledge", "handoff", "memory_status"}
    assert seen["instructions"] and "remember" in seen["instructions"]
    top = seen["found"][0]
    assert top["id"] == seen["id"]
    assert top["scope"] == WIDGETS
    assert top["label"] == "[CONFIRMED]"
    assert seen["refused"] is True
    assert seen["id"] not in seen["after"]
    # Its job is on the board this machine's processes share: the server answers it, and lists it.
    with TestClient(create_app(Settings(data_dir=data_dir, embed_model="hash:64")), base_url=LOCAL_URL) as server:
        job = server.get(f"/v1/jobs/{seen['job_id']}")
        assert job.status_code == 200, job.text
        assert (job.json()["state"], job.json()["result"]["stored"]) == ("done", 1)
        assert seen["job_id"] in [listed["id"] for listed in server.get("/v1/jobs").json()]


def test_mcp_stdio_scope_flag_locks_the_session(data_dir: Path, git_checkout: Path) -> None:
    """``--scope`` wins over the git remote and locks the session: no other scope, in or out."""
    secret = run_cli_json(
        "memorize", "--json", "--title", "Beta secret", "--content", "Beta's private deploy key lives in vault.",
        "--scope", "github.com/acme/beta", data_dir=data_dir, cwd=git_checkout,
    )  # fmt: skip
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(stdio_params(data_dir, git_checkout, "--scope", "github.com/acme/other")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            seen["schemas"] = {name: set(t.input_schema["properties"]) for name, t in tools.items()}
            seen["description"] = tools["memorize"].description
            result = await client.call_tool(
                "memorize", {"title": "Scoped by flag", "content": "The --scope flag wins over the git remote."}
            )
            assert not result.is_error, result.content
            seen["created"] = result.structured_content
            seen["write_beta"] = await client.call_tool(
                "memorize",
                {
                    "title": "Into beta",
                    "content": "A locked session must not write here.",
                    "scope": "github.com/acme/beta",
                },
            )
            seen["read_beta"] = await client.call_tool(
                "remember", {"query": "deploy key vault", "scope": "github.com/acme/beta"}
            )
            seen["recall"] = (await client.call_tool("remember", {"query": "beta deploy key vault"})).structured_content
            seen["forget_beta"] = await client.call_tool("forget", {"id": secret["id"], "confirm": True})
            seen["global"] = await client.call_tool(
                "memorize", {"title": "Shared lesson", "content": "Global writes stay open.", "global": True}
            )

    anyio.run(main)
    assert all("scope" not in props for props in seen["schemas"].values())
    assert "github.com/acme/other" in seen["description"]
    assert seen["created"]["scope"] == "github.com/acme/other"
    memory = run_cli_json(
        "get", seen["created"]["id"], "--scope", "github.com/acme/other", data_dir=data_dir, cwd=git_checkout
    )
    assert memory["scope"] == "github.com/acme/other"
    for refused in ("write_beta", "read_beta"):
        assert seen[refused].is_error and "scope" in seen[refused].content[0].text
    assert seen["recall"]["scopes"] == ["github.com/acme/other", ""]
    assert secret["id"] not in {r["id"] for r in seen["recall"]["results"]}
    assert seen["forget_beta"].is_error and "not_found" in seen["forget_beta"].content[0].text
    assert not seen["global"].is_error and seen["global"].structured_content["scope"] == ""
    still = run_cli_json("get", secret["id"], "--scope", "github.com/acme/beta", data_dir=data_dir, cwd=git_checkout)
    assert still["id"] == secret["id"]


# -- the one-shot CLI -----------------------------------------------------------------------------


def test_cli_commands_see_each_others_writes(data_dir: Path, git_checkout: Path) -> None:
    created = run_cli_json(
        "memorize",
        "--json",
        "--title",
        "Widget build cache",
        "--content",
        "The widgets build cache lives in .turbo; clear it when builds go stale.",
        "--tag",
        "build",
        data_dir=data_dir,
        cwd=git_checkout,
    )
    assert created["outcome"] == "stored"
    memory_id = created["id"]

    memory = run_cli_json("get", memory_id, data_dir=data_dir, cwd=git_checkout)
    assert memory["scope"] == WIDGETS
    assert memory["source"] == "user_confirmed"
    assert memory["author"] == "cli"
    assert memory["tags"] == ["build"]

    text = run_cli("remember", "widgets build cache", data_dir=data_dir, cwd=git_checkout)
    assert text.returncode == 0
    assert "[CONFIRMED]" in text.stdout
    assert memory_id in text.stdout
    assert WIDGETS in text.stdout

    again = run_cli_json(
        "memorize",
        "--json",
        "--title",
        "Same thing",
        "--content",
        "The widgets build cache lives in .turbo; clear it when builds go stale.",
        data_dir=data_dir,
        cwd=git_checkout,
    )
    assert (again["id"], again["outcome"]) == (memory_id, "reinforced")

    forgot = run_cli("forget", memory_id, "--confirm", data_dir=data_dir, cwd=git_checkout)
    assert forgot.returncode == 0, forgot.stderr
    assert memory_id in forgot.stdout

    missing = run_cli("get", memory_id, data_dir=data_dir, cwd=git_checkout)
    assert missing.returncode != 0
    assert memory_id in missing.stderr
    assert "Traceback" not in missing.stderr


def test_cli_remember_json_output_is_json(data_dir: Path, git_checkout: Path) -> None:
    memory_id = run_cli_json(
        "memorize",
        "--json",
        "--title",
        "JSON output",
        "--content",
        "Machine readable recall output.",
        data_dir=data_dir,
        cwd=git_checkout,
    )["id"]
    done = run_cli("remember", "machine readable recall", "--json", data_dir=data_dir, cwd=git_checkout)
    assert done.returncode == 0
    assert json.loads(done.stdout)["results"][0]["id"] == memory_id


def test_cli_scope_outside_git_is_local_parent_dir(data_dir: Path, tmp_path: Path) -> None:
    plain = tmp_path / "projects" / "notes"
    plain.mkdir(parents=True)
    created = run_cli_json(
        "memorize",
        "--json",
        "--json",
        "--title",
        "Plain folder",
        "--content",
        "No git here, scope is local.",
        data_dir=data_dir,
        cwd=plain,
    )
    assert run_cli_json("get", created["id"], data_dir=data_dir, cwd=plain)["scope"] == "local/projects/notes"
    # Its job ran in the CLI's own process and ended with it: no id is printed that no one could look up.
    assert created["outcome"] == "stored" and "job_id" not in created

    glob = run_cli_json(
        "memorize",
        "--json",
        "--global",
        "--title",
        "Global one",
        "--content",
        "Shared by every project.",
        data_dir=data_dir,
        cwd=plain,
    )
    assert run_cli_json("get", glob["id"], data_dir=data_dir, cwd=plain)["scope"] == ""


def test_cli_recall_in_another_project_does_not_see_this_one(
    data_dir: Path, git_checkout: Path, tmp_path: Path
) -> None:
    run_cli_json(
        "memorize",
        "--json",
        "--title",
        "Widget secret",
        "--content",
        "Widgets use port 4100 locally.",
        data_dir=data_dir,
        cwd=git_checkout,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = run_cli_json("remember", "widgets port", "--json", data_dir=data_dir, cwd=elsewhere)
    assert found["results"] == []
    text = run_cli("remember", "widgets port", data_dir=data_dir, cwd=elsewhere)
    assert "no memories found" in text.stdout


def test_cli_forget_without_confirm_refuses_and_keeps_the_memory(data_dir: Path, git_checkout: Path) -> None:
    memory_id = run_cli_json(
        "memorize",
        "--json",
        "--title",
        "Do not lose me",
        "--content",
        "Precious knowledge lives here.",
        data_dir=data_dir,
        cwd=git_checkout,
    )["id"]
    refused = run_cli("forget", memory_id, data_dir=data_dir, cwd=git_checkout)
    assert refused.returncode != 0
    assert "confirm" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert run_cli_json("get", memory_id, data_dir=data_dir, cwd=git_checkout)["id"] == memory_id


def test_cli_invalid_input_is_a_clear_error(data_dir: Path, tmp_path: Path) -> None:
    short = run_cli(
        "memorize", "--json", "--title", "ab", "--content", "Long enough content.", data_dir=data_dir, cwd=tmp_path
    )
    assert short.returncode == 2
    assert "title" in short.stderr
    assert "Traceback" not in short.stderr

    bad_scope = run_cli(
        "memorize",
        "--json",
        "--title",
        "Fine title",
        "--content",
        "Long enough content.",
        "--scope",
        "../etc",
        data_dir=data_dir,
        cwd=tmp_path,
    )
    assert bad_scope.returncode == 2
    assert "scope" in bad_scope.stderr
    assert "Traceback" not in bad_scope.stderr

    nothing = run_cli_json("remember", "long enough content", "--json", data_dir=data_dir, cwd=tmp_path)
    assert nothing["results"] == []


def test_serve_refuses_a_directory_as_the_database(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "not-a-file.db"
    folder.mkdir()
    done = run_cli(
        "serve",
        "--port",
        str(free_port()),
        data_dir=data_dir,
        cwd=tmp_path,
        timeout=60,
        HIVEMEM_STORE_URL=f"sqlite:///{folder}",
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "is a directory" in output
    assert str(folder) in output
    assert not any(folder.iterdir())


def test_cli_refuses_a_directory_as_the_database(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "db-folder"
    folder.mkdir()
    done = run_cli("remember", "anything", data_dir=data_dir, cwd=tmp_path, HIVEMEM_STORE_URL=f"sqlite:///{folder}")
    assert done.returncode == 2
    assert "is a directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_refuses_a_file_that_is_not_sqlite(data_dir: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, just some bytes " * 100)
    done = run_cli("remember", "anything", data_dir=data_dir, cwd=tmp_path, HIVEMEM_STORE_URL=f"sqlite:///{junk}")
    assert done.returncode == 2
    assert str(junk) in done.stderr
    assert "Traceback" not in done.stderr
    assert junk.read_bytes().startswith(b"this is not a database")


def test_cli_config_reports_the_environment(data_dir: Path, tmp_path: Path) -> None:
    done = run_cli("config", data_dir=data_dir, cwd=tmp_path)
    assert done.returncode == 0
    config = json.loads(done.stdout)
    assert config["embed_model"] == "hash:64"
    assert Path(config["data_dir"]) == data_dir


def test_cli_and_serve_refuse_a_data_folder_that_is_a_file(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "notes.txt"
    not_a_folder.write_text("a file, not a folder\n")
    for args in (("remember", "anything"), ("serve", "--port", str(free_port()))):
        done = run_cli(*args, data_dir=not_a_folder, cwd=tmp_path, timeout=60, HIVEMEM_SERVER_URL="off")
        output = done.stdout + done.stderr
        assert done.returncode != 0 and "Traceback" not in output, output
        assert f"cannot make the folder of the SQLite store {not_a_folder / 'hivemem.db'}: it is a file" in output
        assert "set HIVEMEM_DATA_DIR" in output
    assert not_a_folder.read_text() == "a file, not a folder\n"


def test_serve_on_a_port_in_use_says_so_before_it_claims_to_serve(data_dir: Path, tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = run_cli("serve", "--port", str(port), data_dir=data_dir, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    starting, error = done.stderr.strip().splitlines()  # what it began to load, then why it stopped
    assert starting.startswith("hivemem: starting: store ")
    assert error == (
        f"error: 127.0.0.1:{port} is in use (another hivemem serve?): stop it, or pick another port "
        "with --port or HIVEMEM_PORT"
    )
    assert "serving on" not in done.stdout
