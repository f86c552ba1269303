"""The CLI as a client: with a server running on the same store, ``memorize``, ``remember``, ``get``
and ``forget`` go through its REST API and answer in milliseconds, instead of opening the store
and loading the model in a process of their own.

Which server: ``HIVEMEM_SERVER_URL`` when set (``off``: never one), else the local ``hivemem serve``
on ``HIVEMEM_PORT`` if it answers ``/healthz`` within a moment and serves the store this CLI would
open (``/healthz`` names its store by a fingerprint). ``HIVEMEM_TOKEN`` is sent as the bearer token.
"""

from __future__ import annotations

import json
import urllib.request

from api.remote import Remote, RemoteError
from hivemem.config import Settings, store_fingerprint

__all__ = ["CLIENT_COMMANDS", "Remote", "RemoteError", "server_for"]

# The commands that go through a running server.
CLIENT_COMMANDS = frozenset({"memorize", "remember", "get", "forget"})
# How long the local server has to answer before the CLI works on its own.
_PROBE_S = 0.3


def server_for(settings: Settings) -> str | None:
    """The base URL of the server this CLI call should go through, or None to work in-process."""
    if settings.server_url == "off":
        return None
    if settings.server_url:
        return settings.server_url.rstrip("/")
    url = f"http://127.0.0.1:{settings.port}"
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=_PROBE_S) as answer:
            health = json.loads(answer.read())
    except (OSError, ValueError):  # nothing listening, another service, or not JSON
        return None
    same_store = isinstance(health, dict) and health.get("store") == store_fingerprint(settings.resolved_store_url())
    return url if same_store else None
