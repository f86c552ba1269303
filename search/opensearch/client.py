"""Connecting to OpenSearch: the store URL, the client's TLS/auth/timeouts.

``opensearchpy`` is imported here and in the other modules of this package only, so the
embedded shape runs without the ``hivemem[opensearch]`` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from hivemem.config import Settings
from hivemem.errors import ConfigError
from search.opensearch.tuning import OpenSearchTuning

__all__ = ["SCHEMES", "ClusterTarget", "make_client", "parse_url", "reporting_connection"]

SCHEMES = ("opensearch+http", "opensearch+https")
_DEFAULT_PORT = 9200


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """Where the cluster is and how to log in, as an ``opensearch+http(s)://`` URL names it."""

    host: str
    port: int
    use_ssl: bool
    username: str | None = None
    password: str | None = None
    index: str | None = None

    @property
    def display(self) -> str:
        """The address without credentials, for messages."""
        return f"{'https' if self.use_ssl else 'http'}://{self.host}:{self.port}"


def parse_url(url: str) -> ClusterTarget:
    """Read ``opensearch+http://HOST:PORT`` or ``opensearch+https://USER:PASS@HOST:PORT/?index=PREFIX``.

    Raises ``ConfigError`` for another scheme, a missing host or an unknown query parameter.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigError(f"OpenSearch URL must start with {' or '.join(s + '://' for s in SCHEMES)}, got {url!r}")
    try:
        port = parts.port or _DEFAULT_PORT
    except ValueError as exc:
        raise ConfigError(f"OpenSearch URL has an invalid port: {exc}") from exc
    if not parts.hostname:
        raise ConfigError("OpenSearch URL names no host: use opensearch+http://HOST:9200")
    if parts.path not in ("", "/"):
        raise ConfigError(f"OpenSearch URL takes no path (got {parts.path!r}); name the index with ?index=PREFIX")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = set(query) - {"index"}
    if unknown:
        raise ConfigError(f"unknown OpenSearch URL parameters {sorted(unknown)}; only ?index=PREFIX is read")
    index = query.get("index", [None])[-1] or None
    return ClusterTarget(
        host=parts.hostname,
        port=port,
        use_ssl=scheme == "opensearch+https",
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        index=index,
    )


def make_client(
    target: ClusterTarget,
    settings: Settings,
    tuning: OpenSearchTuning | None = None,
    *,
    connection_class: type[Any] | None = None,
) -> Any:
    """An ``opensearchpy.OpenSearch`` client for ``target`` with the TLS settings, and the timeout and
    retries of ``tuning`` (None: as configured).

    ``connection_class`` swaps the HTTP connection (the tests validate every request body with it).
    """
    try:
        from opensearchpy import OpenSearch
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError("the OpenSearch store needs the extra: pip install 'hivemem[opensearch]'") from exc
    tuning = tuning or OpenSearchTuning()
    options: dict[str, Any] = {
        "hosts": [{"host": target.host, "port": target.port}],
        "use_ssl": target.use_ssl,
        "verify_certs": settings.opensearch_verify_certs,
        "ssl_show_warn": settings.opensearch_verify_certs,
        "timeout": tuning.opensearch_timeout_s,
        "max_retries": tuning.opensearch_max_retries,
        "retry_on_timeout": tuning.opensearch_max_retries > 0,
    }
    if settings.opensearch_ca_certs is not None:
        ca = Path(settings.opensearch_ca_certs).expanduser()
        if not ca.is_file():
            raise ConfigError(f"HIVEMEM_OPENSEARCH_CA_CERTS: no such file {ca}")
        options["ca_certs"] = str(ca)
    if target.username is not None:
        options["http_auth"] = (target.username, target.password or "")
    if connection_class is not None:
        options["connection_class"] = connection_class
    return OpenSearch(**options)


# The refresh parameter as the client passes it on (bytes), or as a caller wrote it.
_REFRESHING = (b"wait_for", b"true", "wait_for", "true", True)


def reporting_connection(seen: Callable[[str, str, bool], None]) -> type[Any]:
    """A connection class for :func:`make_client` that reports each request to ``seen`` before
    sending it: its method, its path, and whether it waits for a refresh (``refresh=wait_for`` or
    ``true``, or a ``_refresh`` itself), which on a cluster takes up to the index's refresh interval."""
    from opensearchpy import Urllib3HttpConnection

    class Reporting(Urllib3HttpConnection):
        def perform_request(
            self, method: str, url: str, params: Any = None, body: Any = None, *args: Any, **kwargs: Any
        ) -> Any:
            path, _, query = url.partition("?")
            waits = (
                (params or {}).get("refresh") in _REFRESHING
                or "refresh=wait_for" in query
                or "refresh=true" in query
                or path.endswith("/_refresh")
            )
            seen(method, path, waits)
            return super().perform_request(method, url, params, body, *args, **kwargs)

    return Reporting
