"""``hivemem bench cli``: how long a CLI call takes end to end, process start included.

A ``hivemem serve`` is started on a bench data folder with the configured model and filled with
memories over REST; then ``hivemem remember`` runs as a new process ``runs`` times, going through
that server, and for contrast alone (``HIVEMEM_SERVER_URL=off``: it opens the store and loads the
model itself), as does ``hivemem get`` alone (which loads no model).
"""

from __future__ import annotations

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

from bench.suite.local_cluster import free_port, hivemem_command
from bench.suite.metrics import percentile
from hivemem.config import Settings

__all__ = ["run_cli_latency", "wait_ready"]

SCOPE = "bench/cli"
_NOTES = [f"Service {i} keeps its settings in config/service-{i}.toml and restarts nightly." for i in range(50)]


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float = 300) -> None:
    """Wait until the server ``process`` at ``url`` says ready (its model loaded, its store open)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hivemem serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("hivemem serve was not ready in time")


def _timed(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        seconds.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
    ordered = sorted(seconds)
    return {
        "runs": runs,
        "median_s": round(statistics.median(ordered), 3),
        "p95_s": round(percentile(ordered, 0.95), 3),
        "max_s": round(ordered[-1], 3),
    }


def run_cli_latency(settings: Settings, *, runs: int) -> dict[str, Any]:
    """Start a server, fill it, and time CLI calls through it and alone."""
    folder = Path(tempfile.mkdtemp(prefix="hivemem-bench-cli-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("HIVEMEM_SERVER_URL", "HIVEMEM_PORT", "HIVEMEM_DATA_DIR")}
    env |= {"HIVEMEM_DATA_DIR": str(folder), "HIVEMEM_PORT": str(port)}
    command = hivemem_command()
    serve = [*command, "serve", "--port", str(port)]
    server = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, server)
        with httpx.Client(base_url=url, timeout=60) as http:
            notes = [{"title": n[:40], "content": n, "scope": SCOPE} for n in _NOTES]
            http.post("/v1/memories/bulk", json={"memories": notes}).raise_for_status()  # in-process: done on return
            found = http.post("/v1/remember", json={"query": "service 7 settings", "scope": SCOPE}).json()
            memory_id = found["results"][0]["id"]
        remember = [*command, "remember", "where does service 7 keep its settings", "--scope", SCOPE]
        alone = env | {"HIVEMEM_SERVER_URL": "off"}
        report = {
            "bench": "cli",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
            "model": settings.embed_model or "(packaged all-MiniLM-L6-v2)",
            "memories": len(_NOTES),
            "remember_through_server": _timed(remember, env, runs),
            "remember_alone": _timed(remember, alone, max(3, runs // 5)),
            "get_alone_no_model": _timed([*command, "get", memory_id, "--scope", SCOPE], alone, max(3, runs // 5)),
        }
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
    return report
