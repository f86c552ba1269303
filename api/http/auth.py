"""Who is calling over HTTP: one ``authenticate`` for REST, MCP over HTTP and anything served later.

A request carries ``Authorization: Bearer hm_…``. The token's record is read from the store on
every request (so a revocation counts from the next one), checked against its keyed hash in constant
time, and must be live (not revoked, not expired). What the record grants becomes the request's
:class:`hivemem.access.Access`, which :class:`api.services.caller.Caller` applies to every scope a call uses.

When a token is needed: on a team server (``HIVEMEM_TEAM``) always; otherwise as soon as any token
exists, loopback included, unless ``HIVEMEM_TRUST_LOOPBACK`` lets loopback clients in without one.
A server with no token at all answers as before tokens existed: the trusted local caller.

Brute force: an address whose bad tokens pass ``HIVEMEM_AUTH_FAILURES_PER_MIN`` gets 429 for every
request until its minute passes, right or wrong token. A token past ``HIVEMEM_RATE_LIMIT_PER_MIN``
gets 429 too. Both answers carry ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from starlette.routing import BaseRoute, Match

from api.http.denials import audit_denial, token_refusal
from api.http.guard import ASGIApp, Receive, Scope, Send, send_error
from api.private_file import keep_first_private
from hivemem.access import Access
from hivemem.config import Settings
from hivemem.errors import AuthenticationError, ConfigError, StoreError, TooManyAttempts
from hivemem.model import utcnow
from hivemem.throttle import Throttle
from hivemem.tokens import TokenRecord, token_id_of
from search.base import RelationStore, TokenStore

__all__ = ["METADATA_PATH", "PUBLIC_PATHS", "AuthGate", "Authenticator", "protected_resource_metadata", "server_key"]

log = logging.getLogger(__name__)

KEY_FILE = "token.key"
# Answered without a token: probes, the API's description, and where a client learns how to authenticate.
PUBLIC_PATHS = ("/healthz", "/readyz", "/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect", "/ui", "/ui/")
METADATA_PATH = "/.well-known/oauth-protected-resource"
# The scripts and styles of the API pages (api.http.docs_pages) and the dashboard (api.http.dashboard),
# public like the pages: they hold no data, and fetch it with the user's token.
PUBLIC_PREFIXES = ("/docs/static/", "/ui/static/")
# How long "no token exists" is believed before the store is asked again (a token created by the
# CLI in another process counts from then on); "some token exists" is never forgotten.
NO_TOKENS_TTL_S = 1.0


def server_key(settings: Settings) -> bytes:
    """The key tokens are hashed with: from ``HIVEMEM_TOKEN_SECRET``, else ``token.key`` in the data folder.

    The file is made once, readable by its owner only; racing processes agree on the first one
    written (it is linked into place, never overwritten).
    """
    if settings.token_secret:
        return hashlib.sha256(settings.token_secret.encode("utf-8")).digest()
    path = settings.data_dir.expanduser() / KEY_FILE
    if not path.exists():
        keep_first_private(path, secrets.token_hex(32))
    text = path.read_text(encoding="ascii").strip()
    if len(text) != 64:
        raise ConfigError(f"{path} is not a token key (64 hex characters); restore it or set HIVEMEM_TOKEN_SECRET")
    return bytes.fromhex(text)


def is_loopback(address: str | None) -> bool:
    return address is not None and (address == "::1" or address.startswith("127."))


class _Stores(TokenStore, RelationStore, Protocol):
    """What authenticating reads (token records) and writes (the audit of bad tokens)."""


# Bad tokens from every address together, per minute, as a multiple of what one address may send:
# past it every bad token is refused with 429 and left unaudited, so a flood from many addresses
# (or a proxy's) costs neither the audit log's rows nor the store's writes. Valid tokens pass.
ALL_ADDRESSES_FACTOR = 10
_EVERY_ADDRESS = "*"


class Authenticator:
    """Turns a request's ``Authorization`` header and client address into its access.

    Every bad token is audited (a ``denied`` record with the token's id and the address), up to
    ``ALL_ADDRESSES_FACTOR`` times one address's limit a minute; past that, bad tokens are refused
    with 429 and no record. A request with no token is refused without a record: it names no one,
    and MCP clients send one such request to discover how to authenticate.
    """

    def __init__(
        self,
        store: _Stores,
        key: bytes,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.store = store
        self.key = key
        self.team = settings.team
        self.trust_loopback = settings.trust_loopback
        self._failures = Throttle(settings.auth_failures_per_min)
        self._all_failures = Throttle(settings.auth_failures_per_min * ALL_ADDRESSES_FACTOR)
        self._calls = Throttle(settings.rate_limit_per_min) if settings.rate_limit_per_min else None
        self._clock = clock
        self._now = wall_clock
        self._tokens_exist = False
        self._checked_at = -NO_TOKENS_TTL_S
        self._lock = threading.Lock()

    def tokens_required(self, client: str | None) -> bool:
        """Whether a request from ``client`` must carry a token."""
        if self.trust_loopback and is_loopback(client):
            return False
        return self.team or self._any_token()

    def _any_token(self) -> bool:
        # One request asks the store, outside the lock; the others meanwhile take the last answer,
        # as between two checks. Held through the read, a store timing out (10 s a try, 4 tries)
        # queued every request of the server behind one lock.
        with self._lock:
            now = self._clock()
            if self._tokens_exist or now - self._checked_at < NO_TOKENS_TTL_S:
                return self._tokens_exist
            self._checked_at = now
        try:
            found = bool(self.store.tokens())
        except StoreError:
            # The store is away: keep the last answer. "Tokens exist" is never forgotten, and no
            # token can have been created in a store nobody can reach; the call itself then meets
            # the outage (a queued write is still accepted, a read gets 503).
            log.warning("cannot read the token records; keeping the last answer (no token)")
            return self._tokens_exist
        if found:
            with self._lock:
                self._tokens_exist = True
        return self._tokens_exist

    def authenticate(self, authorization: str | None, client: str | None) -> Access | None:
        """The access of a request: None for the trusted local caller, else its token's grants.

        Raises ``AuthenticationError`` (401) and ``TooManyAttempts`` (429).
        """
        address = client or "unknown"
        now = self._clock()
        wait = self._failures.blocked_for(address, now)
        if wait:
            raise TooManyAttempts(f"too many bad tokens from {address}; try again in {wait} s", retry_after_s=wait)
        if authorization is None:
            if self.tokens_required(client):
                raise AuthenticationError("this server needs a token: send `Authorization: Bearer hm_…`")
            return None
        scheme, _, raw = authorization.partition(" ")
        token = raw.strip()
        token_id = token_id_of(token) if scheme.lower() == "bearer" else None
        record = None if token_id is None else self.store.get_token(token_id)
        if record is None or not record.matches(token, self.key) or not record.live(self._now()):
            self._failures.record(address, now)
            wait = self._all_failures.take(_EVERY_ADDRESS, now)
            if wait:
                raise TooManyAttempts(
                    f"too many bad tokens from every address; try again in {wait} s", retry_after_s=wait
                )
            reason, principal = _why_refused(record, token, self.key)
            audit_denial(self.store, token_refusal(token_id, principal, address, reason))
            raise AuthenticationError("the token is not valid: unknown, revoked or expired")
        if self._calls is not None:
            wait = self._calls.take(record.id, now)
            if wait:
                raise TooManyAttempts(
                    f"this token made more than {self._calls.limit} requests this minute; try again in {wait} s",
                    retry_after_s=wait,
                )
        return record.access


def _why_refused(record: TokenRecord | None, token: str, key: bytes) -> tuple[str, str | None]:
    """Why a token was refused, and whose it is (None unless the caller proved it holds the token)."""
    if record is None:
        return "unknown token", None
    if not record.matches(token, key):
        return "wrong secret", None
    return ("revoked" if record.revoked_at is not None else "expired"), record.principal


class AuthGate:
    """ASGI middleware: authenticates every HTTP request but the public paths, and puts its access
    in the request's state (``access``: None for the trusted local caller)."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Callable[[], Authenticator],
        routes: Callable[[], Sequence[BaseRoute]] | None = None,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.routes = routes

    def _served(self, scope: Scope) -> bool:
        """Whether a route serves this path and method. Anything else (an unknown path, a method the
        path does not take) reaches no data: the app answers it (404, 405) with or without a token.
        Without ``routes``, every request counts as served (and is authenticated)."""
        if self.routes is None:
            return True
        return any(route.matches(scope)[0] is Match.FULL for route in self.routes())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        state = scope.setdefault("state", {})
        public = path in PUBLIC_PATHS or path.startswith((METADATA_PATH, *PUBLIC_PREFIXES))
        if public or not self._served(scope):
            state["access"] = None
            await self.app(scope, receive, send)
            return
        import anyio

        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", ())}
        client = scope.get("client")
        address = client[0] if client else None
        try:
            # The store is read: off the event loop.
            access = await anyio.to_thread.run_sync(
                self.authenticator().authenticate, headers.get("authorization"), address
            )
        except TooManyAttempts as exc:
            await send_error(send, 429, "too_many_requests", str(exc), headers={"retry-after": str(exc.retry_after_s)})
            return
        except StoreError as exc:
            # A token's record cannot be read: the request can be neither let in nor turned away for good.
            await send_error(
                send, 503, "store_unavailable", f"cannot check the token: {exc}", headers={"retry-after": "1"}
            )
            return
        except AuthenticationError as exc:
            host = headers.get("host", "localhost")
            metadata = f"{'https' if scope.get('scheme') == 'https' else 'http'}://{host}{METADATA_PATH}"
            challenge = f'Bearer resource_metadata="{metadata}"'
            await send_error(send, 401, "unauthorized", str(exc), headers={"www-authenticate": challenge})
            return
        state["access"] = access
        await self.app(scope, receive, send)


def protected_resource_metadata(base_url: str) -> dict[str, Any]:
    """The OAuth protected-resource metadata (RFC 9728) the MCP authorization spec points clients to.

    Tokens are issued by ``hivemem token create``, not by an authorization server, so none is named.
    """
    return {
        "resource": f"{base_url}/mcp",
        "resource_name": "hivemem",
        "bearer_methods_supported": ["header"],
        "authorization_servers": [],
        "resource_documentation": f"{base_url}/docs",
    }
