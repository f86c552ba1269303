"""A real OpenSearch node for the tests and the benchmarks, run by ``scripts/opensearch-node``.

The script fetches OpenSearch's minimal distribution and the k-NN plugin from Maven Central (cached
after the first time) and starts one node on loopback; this module gives it a free port pair and a
folder of its own, and can kill it the hard way and bring it back on the same data.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from workers.process_alive import process_alive

__all__ = ["NODE_SCRIPT", "NodeUnavailableError", "OpenSearchNode", "node_prerequisites"]

NODE_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "opensearch-node"
# The script names the transport port as the HTTP port plus this; both must be free.
_TRANSPORT_OFFSET = 100
_PORT_RANGE = range(21000, 29000, 37)


class NodeUnavailableError(RuntimeError):
    """The node cannot run here (no Java or Maven, an artifact not served) or did not start."""


def node_prerequisites() -> str | None:
    """Why a node cannot start on this machine, or None when the script has what it needs."""
    if not NODE_SCRIPT.is_file():
        return f"{NODE_SCRIPT} is missing"
    if not (os.environ.get("MVN") or shutil.which("mvn")):
        return "Maven (mvn) is not on PATH"
    if not (os.environ.get("OPENSEARCH_JAVA_HOME") or os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "no Java runtime (java on PATH, JAVA_HOME or OPENSEARCH_JAVA_HOME)"
    return None


def _port_pair_free(port: int) -> bool:
    for candidate in (port, port + _TRANSPORT_OFFSET):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                return False
    return True


def _free_port_pair() -> int:
    # Spread by process so two sessions on one machine do not race for the same first pair.
    start = os.getpid() % len(_PORT_RANGE)
    for index in range(len(_PORT_RANGE)):
        port = _PORT_RANGE[(start + index) % len(_PORT_RANGE)]
        if _port_pair_free(port):
            return port
    raise NodeUnavailableError("no free port pair for an OpenSearch node on 127.0.0.1")


class OpenSearchNode:
    """One node in ``node_dir`` (made if missing), on a free port chosen at the first start."""

    def __init__(self, node_dir: Path, *, heap: str = "512m") -> None:
        self.node_dir = node_dir
        self.heap = heap
        self.port: int | None = None

    @property
    def url(self) -> str:
        """The node's ``http://`` URL (after :meth:`start`)."""
        if self.port is None:
            raise NodeUnavailableError("the node has not been started")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        """Start the node (or bring it back on the same port and data) and wait until it answers."""
        missing = node_prerequisites()
        if missing:
            raise NodeUnavailableError(missing)
        if self.port is None:
            self.port = _free_port_pair()
        self.node_dir.mkdir(parents=True, exist_ok=True)
        # The node runs as another user when this is root: it must be able to enter the folder.
        self.node_dir.chmod(0o755)
        done = self._script("start")
        if done.returncode != 0:
            raise NodeUnavailableError(f"scripts/opensearch-node start failed:\n{done.stderr[-3000:]}")
        return done.stdout.strip().splitlines()[-1]

    def kill(self) -> None:
        """``kill -9`` the node: no flush, no goodbye, as a crash would end it."""
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGKILL)
        # Wait until it is gone, so a restart finds the port and the data folder free.
        self._wait_gone(pid)

    def stop(self) -> None:
        """End the node by its PID (the script's ``stop``)."""
        if self.port is not None:
            self._script("stop")

    def pid(self) -> int | None:
        """The node's PID while it runs."""
        try:
            pid = int((self.node_dir / "opensearch.pid").read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if process_alive(pid) else None

    @staticmethod
    def _wait_gone(pid: int) -> None:
        # The node is not our child (the launcher daemonizes it): it is gone once /proc shows it
        # no more, or shows it dead and waiting for init to reap it.
        stat = Path(f"/proc/{pid}/stat")
        while True:
            try:
                if stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return
            except OSError:
                return
            time.sleep(0.05)

    def _script(self, action: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(NODE_SCRIPT), action, "--port", str(self.port), "--dir", str(self.node_dir)]
        command += ["--heap", self.heap] if action == "start" else []
        return subprocess.run(command, capture_output=True, text=True, check=False)
