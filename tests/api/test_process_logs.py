"""A hivemem process logs plain lines: the MCP SDK's rich handler (half a second of CPU a
traceback) never takes the root logger."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import logging
from api.process.logs import configure_process_logging
from mcp.server import MCPServer
configure_process_logging("info")
MCPServer("probe")  # configures logging with rich's handler when none is in place
print(*[type(h).__name__ for h in logging.getLogger().handlers])
try:
    raise RuntimeError("store away")
except RuntimeError:
    logging.getLogger("opensearch").warning("GET /x [status:N/A]", exc_info=True)
"""


def test_the_root_logger_keeps_the_process_handler_after_the_mcp_server_is_built() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["StreamHandler"]
    line, *traceback = done.stderr.splitlines()
    assert line.endswith("WARNING opensearch: GET /x [status:N/A]")
    assert traceback[0] == "Traceback (most recent call last):" and traceback[-1] == "RuntimeError: store away"
