"""The client hooks as a client runs them: ``hivemem hook EVENT`` with the client's JSON on stdin,
against a running ``hivemem serve`` (and against none)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.hooks.events import COMPACTED_REMINDER, HANDOFF_REMINDER
from tests.e2e.helpers import HivememServer, free_port, hivemem_command, hivemem_env

SCOPE = "github.com/acme/payments"


def hook(
    event: str, payload: dict[str, Any], *, url: str, data_dir: Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run one hook as Claude Code would: the command, its JSON on stdin, a fresh process."""
    return subprocess.run(
        [*hivemem_command(), "hook", event, "--url", url, "--scope", SCOPE],
        input=json.dumps(payload),
        cwd=cwd,
        env=hivemem_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )


def injected(done: subprocess.CompletedProcess[str], event_name: str) -> str:
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == event_name
    text: str = answer["hookSpecificOutput"]["additionalContext"]
    return text


@pytest.fixture
def stocked(server: HivememServer) -> dict[str, str]:
    """A project scope with a handoff, a failure, a progress note and two decisions; their ids."""
    ids = {}
    bodies: dict[str, dict[str, Any]] = {
        "decision": {
            "title": "Deploys go through staging",
            "content": "Every deploy of the payments service goes to staging first and waits for the smoke tests.",
            "memory_type": "decision",
            "importance": 0.9,
        },
        "preference": {
            "title": "Team prefers ruff over flake8",
            "content": "We lint with ruff; flake8 was removed from the toolchain.",
            "memory_type": "preference",
        },
        "failure": {
            "title": "Refund webhook times out",
            "content": "The refund webhook times out under load when the ledger lock is held.",
            "memory_type": "failure",
            "details": {"error": "TimeoutError after 30 s", "component": "webhooks", "severity": "high"},
        },
        "progress": {
            "title": "Currency conversion",
            "content": "Currency conversion is half built: rates are cached, rounding is not done.",
            "memory_type": "progress",
            "details": {"feature": "currency conversion", "status": "in_progress", "completion": 50},
        },
    }
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for key, body in bodies.items():
            answer = http.post("/v1/memories", json={**body, "scope": SCOPE})
            assert answer.status_code == 201, answer.text
            ids[key] = answer.json()["id"]
        saved = http.post(
            "/v1/handoff",
            json={"summary": "Refund retries half done", "next_steps": ["add jitter to retries"], "scope": SCOPE},
        )
        assert saved.status_code == 201, saved.text
    return ids


def test_session_start_injects_a_bounded_briefing(
    server: HivememServer, stocked: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    start = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(tmp_path)}
    text = injected(hook("session-start", start, url=server.url, data_dir=data_dir, cwd=tmp_path), "SessionStart")
    assert len(text) <= 6000
    assert "Refund retries half done" in text and "add jitter to retries" in text  # the latest handoff
    assert f"Refund webhook times out (id {stocked['failure']})" in text  # the open failure
    assert "currency conversion: in_progress, 50% done" in text
    assert text.index("Deploys go through staging") < text.index("Team prefers ruff")  # by importance
    assert "`remember`" in text
    # After a compaction in a session that saved no handoff since it began: the reminder too.
    compacted = injected(
        hook("session-start", {**start, "source": "compact"}, url=server.url, data_dir=data_dir, cwd=tmp_path),
        "SessionStart",
    )
    assert compacted.endswith(COMPACTED_REMINDER)


def test_prompt_submit_injects_relevant_memories_and_nothing_for_an_unrelated_prompt(
    server: HivememServer, stocked: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    asked = {"session_id": "s-2", "hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path)}
    matching = {**asked, "prompt": "does every deploy of the payments service go to staging first?"}
    text = injected(
        hook("prompt-submit", matching, url=server.url, data_dir=data_dir, cwd=tmp_path), "UserPromptSubmit"
    )
    assert f"Deploys go through staging (id {stocked['decision']})" in text and "[INFERRED]" in text
    assert "`memory` with action `get`" in text  # the MCP tool's action, as an agent would call it
    for prompt in ("write me a haiku about autumn leaves falling", "yes", "/compact"):
        quiet = hook("prompt-submit", {**asked, "prompt": prompt}, url=server.url, data_dir=data_dir, cwd=tmp_path)
        assert (quiet.returncode, quiet.stdout) == (0, ""), prompt


def test_stop_asks_once_for_a_handoff_after_real_work(
    server: HivememServer, stocked: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text(
        "".join(json.dumps({"message": {"content": [{"type": "tool_use", "name": "Edit"}]}}) + "\n" for _ in range(12)),
        encoding="utf-8",
    )
    run = {"session_id": "s-3", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    began = hook("session-start", {**run, "source": "startup"}, url=server.url, data_dir=data_dir, cwd=tmp_path)
    assert began.returncode == 0
    stopping = {**run, "hook_event_name": "Stop", "stop_hook_active": False}
    first = hook("stop", stopping, url=server.url, data_dir=data_dir, cwd=tmp_path)
    assert json.loads(first.stdout) == {"decision": "block", "reason": HANDOFF_REMINDER}
    assert hook("stop", stopping, url=server.url, data_dir=data_dir, cwd=tmp_path).stdout == ""  # once
    # A new session that saves its handoff is not reminded; nor is one that did little.
    for session, saves in (("s-4", True), ("s-5", False)):
        other = {**stopping, "session_id": session}
        hook("session-start", {**other, "source": "startup"}, url=server.url, data_dir=data_dir, cwd=tmp_path)
        if saves:
            body = {"summary": "Retries done", "scope": SCOPE}
            assert httpx.post(f"{server.url}/v1/handoff", json=body, timeout=60).status_code == 201
        else:
            other["transcript_path"] = str(tmp_path / "missing.jsonl")
        assert hook("stop", other, url=server.url, data_dir=data_dir, cwd=tmp_path).stdout == ""


def test_without_a_server_a_hook_exits_0_silently_and_logs_why(data_dir: Path, tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    payloads = {
        "session-start": {"session_id": "s-6", "source": "startup"},
        "prompt-submit": {"session_id": "s-6", "prompt": "how do we deploy the payments service"},
        "stop": {"session_id": "s-6", "stop_hook_active": False},
    }
    for event, payload in payloads.items():
        done = hook(event, payload, url=nowhere, data_dir=data_dir, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event
    bad_json = subprocess.run(
        [*hivemem_command(), "hook", "prompt-submit", "--url", nowhere],
        input="{not json",
        env=hivemem_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (bad_json.returncode, bad_json.stdout) == (0, "")
    log = Path(hivemem_env(data_dir)["XDG_STATE_HOME"]) / "hivemem" / "hooks.log"
    lines = log.read_text(encoding="utf-8").splitlines()
    assert any(line.split(" ", 1)[1].startswith("session-start: RemoteError") for line in lines), lines
    assert any("prompt-submit: JSONDecodeError" in line for line in lines), lines


def test_a_refused_token_gives_exit_0_silently_and_a_line_in_the_log(data_dir: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    team = HivememServer(data_dir, logs, HIVEMEM_TEAM="true")
    team.start()
    try:
        done = subprocess.run(
            [*hivemem_command(), "hook", "session-start", "--url", team.url, "--scope", SCOPE],
            input=json.dumps({"session_id": "s-7", "source": "startup"}),
            env=hivemem_env(data_dir, HIVEMEM_TOKEN="hm_000000000000_not-a-live-token"),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        team.stop()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    log = Path(hivemem_env(data_dir)["XDG_STATE_HOME"]) / "hivemem" / "hooks.log"
    assert "session-start: RemoteError: unauthorized" in log.read_text(encoding="utf-8")


class _HostileServer:
    """A loopback HTTP server that answers every request with ``body_bytes`` of a briefing-shaped
    JSON body, ``piece`` bytes at a time with ``pause_s`` between pieces; it counts what it sent
    before the client hung up."""

    def __init__(self, body_bytes: int, *, piece: int, pause_s: float) -> None:
        self.body_bytes, self.piece, self.pause_s = body_bytes, piece, pause_s
        self.sent = 0
        self.finished = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _body(self) -> Iterator[bytes]:
        head = b'{"text": "'
        yield head
        left = self.body_bytes - len(head) - 2
        while left > 0:
            size = min(self.piece, left)
            yield b"a" * size
            left -= size
        yield b'"}'

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.recv(65536)  # the request; its body, if any, is not needed
            headers = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {self.body_bytes}\r\n\r\n"
            try:
                connection.sendall(headers.encode())
                for piece in self._body():
                    connection.sendall(piece)
                    self.sent += len(piece)
                    if self.pause_s:
                        time.sleep(self.pause_s)  # the server's own pace: what the hook must not wait out
            except OSError:  # the hook hung up, as it should
                pass
        self.finished.set()

    def close(self) -> None:
        self._listener.close()


def _hook_with_usage(event: str, payload: dict[str, Any], url: str, data_dir: Path, cwd: Path) -> tuple[str, int]:
    """Run a hook as a client would; its stdout and the most resident memory it was seen to hold
    (its VmHWM, read while it runs: the kernel's rusage of a child starts from the parent's peak)."""
    process = subprocess.Popen(
        [*hivemem_command(), "hook", event, "--url", url, "--scope", SCOPE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=cwd,
        env=hivemem_env(data_dir),
    )
    peak = 0
    status = Path(f"/proc/{process.pid}/status")

    def watch() -> None:
        nonlocal peak
        while process.poll() is None:
            try:
                lines = status.read_text().splitlines()
            except OSError:
                return
            peak = max([peak, *(int(line.split()[1]) * 1024 for line in lines if line.startswith("VmHWM:"))])
            time.sleep(0.002)  # a sample: it can only miss a peak, never invent one

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(payload).encode())
    process.stdin.close()
    with process.stdout:
        printed = process.stdout.read().decode()
    assert process.wait() == 0
    watcher.join()
    return printed, peak


def test_a_server_that_answers_a_byte_at_a_time_cannot_hold_the_hook(data_dir: Path, tmp_path: Path) -> None:
    # 400 bytes, one every 0.1 s: 40 s to send it all, were the hook to wait for it.
    slow = _HostileServer(400, piece=1, pause_s=0.1)
    try:
        printed, _ = _hook_with_usage(
            "session-start", {"session_id": "s-8", "source": "startup"}, slow.url, data_dir, tmp_path
        )
        assert slow.finished.wait(timeout=120)
    finally:
        slow.close()
    assert printed == ""
    assert slow.sent < slow.body_bytes  # the hook hung up, on its own deadline, before the server was done
    log = Path(hivemem_env(data_dir)["XDG_STATE_HOME"]) / "hivemem" / "hooks.log"
    assert "session-start:" in log.read_text(encoding="utf-8")


def test_a_server_that_answers_200_mb_neither_fills_the_hook_nor_the_agents_context(
    data_dir: Path, tmp_path: Path
) -> None:
    flood = _HostileServer(200 * 1024 * 1024, piece=1024 * 1024, pause_s=0.0)
    try:
        printed, peak = _hook_with_usage(
            "session-start", {"session_id": "s-9", "source": "startup"}, flood.url, data_dir, tmp_path
        )
        assert flood.finished.wait(timeout=120)
    finally:
        flood.close()
    assert printed == ""  # the answer was over the cap: refused, not printed
    assert flood.sent < flood.body_bytes
    assert 0 < peak < 150 * 1024 * 1024  # the interpreter and the REST client, not the answer


def test_a_briefing_longer_than_the_print_cap_is_cut_to_it() -> None:
    from api.hooks.command import PRINT_MAX_CHARS, _within_print_cap

    answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": 'é"\n' * 50_000}}
    printed = _within_print_cap(answer)
    assert printed is not None and len(printed) <= PRINT_MAX_CHARS
    assert json.loads(printed)["hookSpecificOutput"]["additionalContext"].endswith("… (cut by hivemem)")


def test_an_event_without_a_project_gets_silence_not_the_global_briefing(
    server: HivememServer, stocked: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    # Empty stdin, no CLAUDE_PROJECT_DIR, no --scope: the hook knows of no project to brief.
    done = subprocess.run(
        [*hivemem_command(), "hook", "session-start", "--url", server.url],
        input="",
        cwd=tmp_path,
        env=hivemem_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "")
