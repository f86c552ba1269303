"""The log of a hivemem process (``serve``, the stdio MCP server): plain lines on stderr.

Building an ``MCPServer`` configures the root logger with rich's handler when nobody has
(``logging.basicConfig``). Rich renders a traceback with syntax highlighting, about half a second
of CPU each: with the OpenSearch node down, the client's warning for each failed attempt made the
gateway's once-a-second token check take two seconds, and every request queued behind it. A
process configures its own log before it builds the MCP server, so the SDK's finds it in place.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_process_logging"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_process_logging(level: str) -> None:
    """Log records at ``level`` (a name: info, warning; uvicorn's trace counts as debug) and above
    to stderr, one plain line each, with the traceback when there is one. Does nothing when the
    root logger has a handler already (a test's, an embedding program's)."""
    named = logging.getLevelName(level.upper())
    logging.basicConfig(level=named if isinstance(named, int) else logging.DEBUG, format=_FORMAT, stream=sys.stderr)
