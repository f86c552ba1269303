"""Helpers for end-to-end tests: run real ``hivemem`` processes on a temporary data dir.

Every process gets the model-free ``hash:64`` embedder and private XDG folders (the autouse
``clean_environ`` fixture has already removed any ``HIVEMEM_*`` variable from this environment).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Any

import httpx

from bench.suite.local_cluster import free_port, hivemem_command
from hivemem.embedding import HashEmbedder
from search import Store, open_store

STARTUP_TIMEOUT_S = 300.0  # backstops: each wait ends on its condition, these only on a hang
STOP_TIMEOUT_S = 120.0


def hivemem_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """This (already cleaned) environment plus the data dir and the hash embedder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env |= {"HIVEMEM_DATA_DIR": str(data_dir), "HIVEMEM_EMBED_MODEL": "hash:64", "PYTHONUNBUFFERED": "1"}
    return env | extra


def open_test_store(data_dir: Path) -> Store:
    """The SQLite store the processes started with ``hivemem_env(data_dir)`` use."""
    embedder = HashEmbedder(64)
    return open_store(
        f"sqlite:///{data_dir / 'hivemem.db'}", embedding_model=embedder.model_id, dimension=embedder.dimension
    )


def wait_for_job(http: httpx.Client, job_id: str, timeout_s: float = 300) -> dict[str, Any]:
    """Poll ``GET /v1/jobs/{job_id}`` until the job is done or failed, and return it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not final after {timeout_s} s")


def run_cli(*args: str, data_dir: Path, cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``hivemem ARGS`` to completion and return what it did."""
    return subprocess.run(
        [*hivemem_command(), *args],
        cwd=cwd,
        env=hivemem_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_cli_json(*args: str, data_dir: Path, cwd: Path) -> Any:
    """Run ``hivemem ARGS``, assert it succeeded, and parse its JSON output."""
    done = run_cli(*args, data_dir=data_dir, cwd=cwd)
    assert done.returncode == 0, f"hivemem {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


class HivememServer:
    """One ``hivemem serve`` subprocess; start and stop it as often as a test needs."""

    def __init__(self, data_dir: Path, log_dir: Path, *, host: str = "127.0.0.1", **env: str) -> None:
        self.data_dir = data_dir
        self.log_dir = log_dir
        self.host = host
        self.env = env
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._starts = 0

    @property
    def url(self) -> str:
        """Where to reach it: always the loopback address, whatever it binds."""
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        paths = sorted(self.log_dir.glob("serve-*.log"))
        return "\n".join(p.read_text(errors="replace") for p in paths)

    def start(self, *, ready: bool = True) -> None:
        """Start ``hivemem serve`` and wait until /readyz says 200 (``ready=False``: until it answers at all)."""
        assert self.process is None, "already running"
        self._starts += 1
        self.port = free_port()
        self._log = (self.log_dir / f"serve-{self._starts}.log").open("wb")
        self.process = subprocess.Popen(
            [*hivemem_command(), "serve", "--host", self.host, "--port", str(self.port)],
            env=hivemem_env(self.data_dir, **self.env),
            cwd=self.log_dir,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready(ready)

    def _wait_ready(self, ready: bool = True) -> None:
        assert self.process is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"hivemem serve exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200 or not ready:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"hivemem serve not ready after {STARTUP_TIMEOUT_S}s:\n{self.log_text()}")

    def peak_rss_bytes(self) -> int:
        """The most resident memory the server process has held so far (the kernel's VmHWM)."""
        assert self.process is not None, "not running"
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:"))

    def stop(self) -> int:
        """SIGTERM, wait for a graceful exit (kill if it hangs), and return the exit status."""
        process, self.process = self.process, None
        if process is None:
            return 0
        try:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                    raise AssertionError(f"hivemem serve ignored SIGTERM:\n{self.log_text()}") from None
            return process.returncode
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None
