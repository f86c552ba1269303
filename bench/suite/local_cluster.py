"""A distributed shape on this machine: a private ``redis-server``, ``hivemem worker`` processes and
an ``osmem-server`` (OpenSearch's API, in memory).

The benchmarks measure the Celery path and the OpenSearch store with them, and the tests use the
same processes. Everything runs on loopback, on free ports, in folders the caller owns.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

__all__ = ["RedisServer", "WorkerProcess", "free_port", "hivemem_command", "redis_server_binary", "start_osmem"]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def hivemem_command() -> list[str]:
    """The installed ``hivemem`` console script next to this interpreter, else ``python -m api.cli``."""
    script = Path(sys.executable).with_name("hivemem")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "api.cli"]


def redis_server_binary() -> str | None:
    """``redis-server`` from PATH (Debian's package puts it in /usr/bin), if installed."""
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").is_file() else None
    )


def start_osmem(port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """Start a private osmem-server on ``port`` (0: any free one); the process and its ``http://``
    URL. It stops with this process. Raises ``ImportError`` without the package (the ``dev``
    extra), ``RuntimeError`` when it does not start."""
    import osmem_server  # type: ignore[import-untyped]

    binary = osmem_server.resolve_binary()
    process = subprocess.Popen(
        [binary, "--no-stdin-watch", "--addr", f"127.0.0.1:{port}", "--parent-pid", str(os.getpid()), "--no-ja"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the server prints {"url": ...} once it listens
    try:
        url = str(json.loads(line)["url"])
    except (ValueError, KeyError) as exc:
        process.kill()
        process.communicate()  # reaps it and closes its pipe
        raise RuntimeError(f"osmem-server did not start: {line!r}") from exc
    return process, url


class RedisServer:
    """A private ``redis-server`` on a free loopback port: without persistence, or with the
    append-only file as a durable broker runs it (``appendonly=True``). A restart keeps the port
    and the folder, so an AOF server comes back with what it had."""

    def __init__(self, binary: str, work_dir: Path, *, appendonly: bool = False) -> None:
        self.binary = binary
        self.work_dir = work_dir
        self.appendonly = appendonly
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10) -> None:
        """Start it and wait until it answers PING."""
        import redis

        durable = ["--appendonly", "yes", "--appendfsync", "everysec"]
        persistence = durable if self.appendonly else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                *persistence,
                "--dir", str(self.work_dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        """Terminate it."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def kill(self) -> None:
        """SIGKILL it, as a crash would: no shutdown, no final write."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


class WorkerProcess:
    """One ``hivemem worker`` in its own process group, so it can be killed whole, as a crash would."""

    def __init__(self, env: Mapping[str, str], cwd: Path, log_path: Path) -> None:
        self.env = dict(env)
        self.cwd = cwd
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def nodename(self) -> str:
        """The Celery node name ``hivemem worker`` gives itself."""
        assert self.process is not None
        return f"hivemem-{self.process.pid}@{socket.gethostname()}"

    def log_text(self) -> str:
        """Everything the worker has logged so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def _answers_ping(self) -> bool:
        from celery import Celery

        probe = Celery(broker=self.env["HIVEMEM_BROKER_URL"], set_as_current=False)
        try:
            return bool(probe.control.ping(destination=[self.nodename], timeout=0.3))
        finally:
            probe.close()

    def start(
        self,
        *,
        queues: str | None = None,
        concurrency: int = 1,
        pool: str = "prefork",
        timeout_s: float = 120,
        wait: bool = True,
        nice: int = 0,
    ) -> None:
        """Start it and, with ``wait``, return once it answers a ping over the broker: connected,
        pool up, consuming."""
        assert self.process is None, "already running"
        self._log = self.log_path.open("ab")
        args = [*hivemem_command(), "worker", f"--concurrency={concurrency}", f"--pool={pool}", "--loglevel=info"]
        if queues:
            args.append(f"--queues={queues}")
        if nice:
            args.append(f"--nice={nice}")
        self.process = subprocess.Popen(
            args, env=self.env, cwd=self.cwd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        if not wait:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"hivemem worker exited with {self.process.returncode}:\n{self.log_text()}")
            if self._answers_ping():
                return
            time.sleep(0.1)
        raise RuntimeError(f"hivemem worker not ready after {timeout_s:.0f} s:\n{self.log_text()}")

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once: no warm shutdown, no acks, no cleanup."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self._close()

    def stop(self) -> int:
        """Warm shutdown (SIGTERM): running tasks finish first. Returns the exit status (-9 when it
        ignored SIGTERM for 30 s and had to be killed)."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        status = self.process.returncode
        self._close()
        return status

    def _close(self) -> None:
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None
