"""``hivemem bench hooks``: how long each client hook takes as the client runs it, process start
included, against a server holding ``size`` memories.

A ``hivemem serve`` on the configured model is filled over REST with SciFact sentences (real text
written by others; one in ten a decision or preference, so the briefing has them to rank), a few
failures, progress notes and a handoff. Then each hook runs ``runs`` times as a new process with the
client's JSON on stdin: ``session-start`` (the briefing), ``prompt-submit`` (a SciFact claim as the
prompt: recall, then the similarity floor), and ``stop`` after a session of real work (it reads the
transcript and asks the server for the latest handoff). ``answered`` counts the calls that injected
something: for prompt-submit, the claims (about the store's abstracts) should be answered, and the
LoCoMo questions beside them (about people's lives, nothing the store holds: ``prompt_unrelated``)
should not, since a hook that pastes noise into every prompt is worse than none.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.suite.cli_latency import wait_ready
from bench.suite.data_files import reading
from bench.suite.local_cluster import free_port, hivemem_command
from bench.suite.metrics import percentile
from bench.suite.scale import load_queries, load_texts
from hivemem.config import Settings

__all__ = ["run_hooks_bench"]

SCOPE = "bench/hooks"
_BULK = 1000  # memories a bulk call carries at most
_KEY_EVERY = 10  # one memory in ten is a decision or a preference


def _fill(http: httpx.Client, texts: list[tuple[str, str]]) -> None:
    memories = []
    for i, (title, sentence) in enumerate(texts):
        kind = ("decision", "preference")[i // _KEY_EVERY % 2] if i % _KEY_EVERY == 0 else "fact"
        memories.append({"title": title[:200], "content": sentence, "scope": SCOPE, "memory_type": kind})
    for start in range(0, len(memories), _BULK):
        http.post("/v1/memories/bulk", json={"memories": memories[start : start + _BULK]}).raise_for_status()
    for i in range(5):
        failure = {"error": f"step {i} failed", "component": f"stage-{i}", "severity": "high"}
        body = {"title": f"Stage {i} fails on empty input", "content": f"Stage {i} raises on an empty batch.",
                "memory_type": "failure", "details": failure, "scope": SCOPE}  # fmt: skip
        http.post("/v1/memories", json=body).raise_for_status()
        progress = {"feature": f"feature {i}", "status": "in_progress", "completion": 20 * i}
        body = {"title": f"Feature {i} under way", "content": f"Feature {i} is partly built.",
                "memory_type": "progress", "details": progress, "scope": SCOPE}  # fmt: skip
        http.post("/v1/memories", json=body).raise_for_status()
    handoff = {"summary": "Benchmark fill done", "next_steps": ["time the hooks"], "scope": SCOPE}
    http.post("/v1/handoff", json=handoff).raise_for_status()


def _timed(argv: list[str], payloads: list[dict[str, Any]], env: dict[str, str]) -> dict[str, Any]:
    seconds, answered = [], 0
    for payload in payloads:
        began = time.perf_counter()
        done = subprocess.run(argv, input=json.dumps(payload), env=env, capture_output=True, text=True, check=False)
        seconds.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
        answered += bool(done.stdout.strip())
    ordered = sorted(seconds)
    return {
        "runs": len(payloads),
        "answered": answered,
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(percentile(ordered, 0.95) * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def _unrelated_prompts(data: Path, count: int) -> list[str]:
    """LoCoMo's questions (about two people's conversations), where the data folder has them."""
    path = data / "locomo" / "locomo-dev.json"
    if not path.is_file():
        return []
    with reading(path, "LoCoMo (a JSON list of conversations)"):
        conversations = json.loads(path.read_text(encoding="utf-8"))
    return [str(qa["question"]) for conversation in conversations for qa in conversation["qa"]][:count]


def run_hooks_bench(settings: Settings, *, data: Path, size: int, runs: int) -> dict[str, Any]:
    """Start a server, fill it with ``size`` memories, and time ``runs`` calls of each hook."""
    texts = load_texts(data, size)
    prompts = load_queries(data, runs)
    unrelated = _unrelated_prompts(data, runs)
    folder = Path(tempfile.mkdtemp(prefix="hivemem-bench-hooks-"))
    port = free_port()
    keep = ("HIVEMEM_SERVER_URL", "HIVEMEM_PORT", "HIVEMEM_DATA_DIR", "XDG_STATE_HOME")
    env = {k: v for k, v in os.environ.items() if k not in keep}
    env |= {"HIVEMEM_DATA_DIR": str(folder / "data"), "HIVEMEM_PORT": str(port), "XDG_STATE_HOME": str(folder)}
    command = hivemem_command()
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    transcript = folder / "transcript.jsonl"
    transcript.write_text(
        "".join(json.dumps({"message": {"content": [{"type": "tool_use"}]}}) + "\n" for _ in range(20)),
        encoding="utf-8",
    )
    try:
        wait_ready(url, server)
        began = time.perf_counter()
        with httpx.Client(base_url=url, timeout=600) as http:
            _fill(http, texts)
        filled_s = time.perf_counter() - began

        def hook(event: str) -> list[str]:
            return [*command, "hook", event, "--url", url, "--scope", SCOPE]

        sessions = [
            {"session_id": f"bench-{i}", "cwd": str(folder), "transcript_path": str(transcript)} for i in range(runs)
        ]
        report = {
            "bench": "hooks",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
            "model": settings.embed_model or "(packaged all-MiniLM-L6-v2)",
            "memories": len(texts) + 11,
            "fill_s": round(filled_s, 1),
            "session_start": _timed(hook("session-start"), [s | {"source": "startup"} for s in sessions], env),
            "prompt_submit": _timed(
                hook("prompt-submit"), [s | {"prompt": p} for s, p in zip(sessions, prompts, strict=False)], env
            ),
            "stop": _timed(hook("stop"), [s | {"stop_hook_active": False} for s in sessions], env),
        }
        if unrelated:
            asked = [s | {"prompt": p} for s, p in zip(sessions, unrelated, strict=False)]
            report["prompt_unrelated"] = _timed(hook("prompt-submit"), asked, env)
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
    return report
