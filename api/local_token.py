"""This machine's own token: what the CLI and the hooks send to the local server once it asks for one.

A store without tokens lets every local client in. The first ``hivemem token create`` changes that
for every HTTP client, loopback included, and the prompt hook and ``hivemem remember`` on the
server's own machine were refused from then on. So creating a token also makes one for this
machine (principal ``local``, admin on every scope, as the CLI working on the store's files is),
kept in the data folder next to the store's key, readable by its owner only. The CLI and the hooks
send it when ``HIVEMEM_TOKEN`` is not set, and only to a server on a loopback address: it never
leaves the machine. Revoking it (``hivemem token revoke``) is noticed and a new one made on the
next ``token create``; deleting the file does the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from api.private_file import replace_private
from hivemem.config import Settings
from hivemem.tokens import token_id_of

if TYPE_CHECKING:
    from api.services.tokens import TokenService

__all__ = ["LOCAL_PRINCIPAL", "LOCAL_TOKEN_FILE", "client_token", "ensure_local_token", "local_token"]

LOCAL_TOKEN_FILE = "local.token"
LOCAL_PRINCIPAL = "local"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _path(settings: Settings) -> Path:
    return settings.data_dir.expanduser() / LOCAL_TOKEN_FILE


def local_token(settings: Settings) -> str:
    """The token of this machine, or "" when none was made (or the file cannot be read)."""
    try:
        return _path(settings).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def client_token(settings: Settings, url: str) -> str:
    """The token a CLI call or a hook sends to ``url``: ``HIVEMEM_TOKEN``, else this machine's own
    when ``url`` is a loopback address."""
    if settings.token:
        return settings.token
    host = urlsplit(url).hostname or ""
    return local_token(settings) if host in _LOOPBACK_HOSTS else ""


def ensure_local_token(service_tokens: TokenService, settings: Settings) -> bool:
    """Make this machine's token if there is none that still works; True when one was made."""
    from api.services.caller import Caller
    from hivemem.token_schemas import TokenCreate

    caller = Caller(principal="cli")
    held = token_id_of(local_token(settings))
    live = {t.id for t in service_tokens.list(caller) if t.revoked_at is None and t.principal == LOCAL_PRINCIPAL}
    if held is not None and held in live:
        return False
    issued = service_tokens.create(TokenCreate(name=LOCAL_PRINCIPAL, grants=["*:admin"]), caller)
    replace_private(_path(settings), issued.token)
    return True
