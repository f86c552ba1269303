"""Fetching a URL without becoming a proxy into the server's network (SSRF).

- http and https only, no credentials in the URL.
- The host is resolved here and every address it resolves to is checked: private, loopback,
  link-local, multicast, reserved and unspecified ranges are refused, IPv4-mapped IPv6 included.
  Odd spellings (``127.1``, ``2130706433``, ``0x7f.1``) are what the resolver makes of them, so the
  check sees the address the connection would use.
- The connection goes to the address that was checked (the URL's host is kept for ``Host`` and
  TLS), so a DNS answer that changes between check and connect (rebinding) cannot move it.
- Redirects are followed by hand, each hop checked again, at most ``max_redirects``.
- Size, time and content-type limits; ``allow_private`` lets an internal wiki be read.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from hivemem.errors import DocumentError
from hivemem.knowledge import Document
from workers.documents.guards import format_of

__all__ = ["FetchLimits", "check_url", "fetch_url"]

_ACCEPTED_TYPES = (
    "text/html",
    "application/xhtml+xml",
    "text/plain",
    "text/markdown",
    "application/pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """How far a fetch may go. The configured one: ``workers.documents.sources.fetch_limits``."""

    max_bytes: int
    timeout_s: float
    allow_private: bool
    max_redirects: int = 5


# IPv6 forms that carry an IPv4 address a gateway or the host's stack may reach: NAT64's well-known
# prefix (RFC 6052, the IPv4 in the last 32 bits) and the deprecated IPv4-compatible ::a.b.c.d.
# NAT64's local-use prefix places the IPv4 by the operator's prefix length: refused whole.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to: 6to4, Teredo (server and client), NAT64 and
    IPv4-compatible (a mapped address is that IPv4 itself, judged as such by :func:`_refused`)."""
    found = [address.sixtofour] if address.sixtofour is not None else []
    if address.teredo is not None:
        found += list(address.teredo)
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return _refused(address.ipv4_mapped)
        # 6to4 and Teredo carry an IPv4 address: that address is where the connection goes, so it
        # alone is judged (Python before 3.11.4 calls all of 2002::/16 private, refusing public ones).
        if address.sixtofour is not None:
            return _refused(address.sixtofour)
        if address.teredo is not None:
            return any(_refused(v4) for v4 in address.teredo)
        if address in _NAT64_LOCAL or any(_refused(v4) for v4 in _embedded_ipv4(address)):
            return True
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def check_url(url: str, limits: FetchLimits) -> tuple[str, str, int]:
    """The scheme, the checked address to connect to, and the port of ``url``. Raises ``DocumentError``."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:  # "http://[::1/": an unclosed IPv6 literal, and the like
        raise DocumentError(f"refused: not a valid URL ({exc})", source=url) from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise DocumentError(f"refused: only http and https URLs are fetched, not {scheme or 'a bare path'}", source=url)
    if parts.username or parts.password:
        raise DocumentError("refused: credentials in a URL are not sent", source=url)
    if not host:
        raise DocumentError("refused: the URL names no host", source=url)
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise DocumentError(f"refused: bad port ({exc})", source=url) from exc
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DocumentError(f"cannot resolve host {host!r} ({exc})", source=url) from exc
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not limits.allow_private:
        bad = sorted({str(a) for a in addresses if _refused(a)})
        if bad:
            raise DocumentError(
                f"refused: {host} resolves to a private or reserved address ({', '.join(bad)}); set "
                "HIVEMEM_KNOWLEDGE_ALLOW_PRIVATE_URLS=true to read an internal site",
                source=url,
            )
    return scheme, str(addresses[0]), port


def fetch_url(url: str, limits: FetchLimits) -> Document:
    """The document at ``url``, after every check above. Raises ``DocumentError``."""
    import httpx

    deadline = time.monotonic() + limits.timeout_s
    current = url
    for _ in range(limits.max_redirects + 1):
        scheme, address, port = check_url(current, limits)
        parts = urlsplit(current)
        literal = f"[{address}]" if ":" in address else address
        pinned = urlunsplit((scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
        host_header = parts.netloc.rsplit("@", 1)[-1]
        extensions = {"sni_hostname": parts.hostname} if scheme == "https" else {}
        remaining = max(0.1, deadline - time.monotonic())
        try:
            with (
                httpx.Client(timeout=remaining, follow_redirects=False, trust_env=False) as client,
                client.stream(
                    "GET", pinned, headers={"Host": host_header, "User-Agent": "hivemem"}, extensions=extensions
                ) as response,
            ):
                if response.is_redirect:
                    location = response.headers.get("location")
                    if not location:
                        raise DocumentError("a redirect without a Location", source=url)
                    current = urljoin(current, location)
                    continue
                if response.status_code >= 400:
                    raise DocumentError(f"the server answered {response.status_code}", source=url)
                content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                if content_type and content_type not in _ACCEPTED_TYPES:
                    raise DocumentError(
                        f"refused: content type {content_type!r} is not a document hivemem reads", source=url
                    )
                declared = response.headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > limits.max_bytes:
                    raise DocumentError(
                        f"refused: {int(declared):,} bytes is over the {limits.max_bytes:,}-byte limit", source=url
                    )
                body = bytearray()
                for piece in response.iter_bytes():
                    body += piece
                    if len(body) > limits.max_bytes:
                        raise DocumentError(f"refused: over the {limits.max_bytes:,}-byte limit", source=url)
                    if time.monotonic() > deadline:
                        raise DocumentError(f"refused: not fetched within {limits.timeout_s:g} s", source=url)
        except httpx.HTTPError as exc:
            raise DocumentError(f"cannot fetch ({type(exc).__name__}: {exc})", source=url) from exc
        name = urlsplit(current).path or "/"
        fmt = format_of(name if "." in name.rsplit("/", 1)[-1] else "page.html", content_type or None)
        return Document(uri=url, name=name, data=bytes(body), content_type=content_type or None, format=fmt)
    raise DocumentError(f"refused: more than {limits.max_redirects} redirects", source=url)
