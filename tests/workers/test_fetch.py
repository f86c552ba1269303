"""URL fetching: private addresses refused in every spelling, each redirect checked, the checked address used."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from hivemem.errors import DocumentError
from hivemem.knowledge import DocumentFormat
from workers.documents import fetch
from workers.documents.fetch import FetchLimits, _refused, fetch_url

PAGE = (
    b"<html><head><title>Wiki</title></head><body><article><h1>Runbook</h1><p>"
    + b"Restart the queue. " * 20
    + b"</p></article></body></html>"
)


class _Site(BaseHTTPRequestHandler):
    hosts: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Site.hosts.append(self.headers.get("Host", ""))
        port = self.server.server_address[1]
        routes: dict[str, tuple[int, dict[str, str], bytes]] = {
            "/page": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE),
            "/hop": (302, {"Location": f"http://127.0.0.2:{port}/page"}, b""),
            "/image": (200, {"Content-Type": "image/png"}, b"\x89PNG...."),
            "/huge": (200, {"Content-Type": "text/plain", "Content-Length": str(10**9)}, b""),
            "/gone": (404, {"Content-Type": "text/plain"}, b"not here"),
        }
        status, headers, body = routes.get(self.path, (404, {}, b""))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.path != "/huge":
            self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def limits(**changes: object) -> FetchLimits:
    """The fetch limits of a test: a megabyte, ten seconds, public addresses only, unless changed."""
    given: dict[str, object] = {"max_bytes": 1_000_000, "timeout_s": 10.0, "allow_private": False}
    return FetchLimits(**(given | changes))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def site() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f.0.0.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://10.1.2.3/",
        "http://192.168.0.10/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://localhost/",
        # IPv6 forms that embed a private or loopback IPv4: 6to4, Teredo, NAT64, IPv4-compatible.
        "http://[2002:7f00:1::]/",
        "http://[2002:a00:1::1]/",
        "http://[2002:c0a8:1::]/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo: client 127.0.0.1 (obfuscated)
        "http://[2001:0:a00:1::1]/",  # Teredo: server 10.0.0.1
        "http://[64:ff9b::7f00:1]/",
        "http://[64:ff9b::a9fe:a9fe]/",  # the cloud metadata address through NAT64
        "http://[64:ff9b:1::a00:1]/",
        "http://[::127.0.0.1]/",
        "http://[::10.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
    ],
)
def test_private_and_reserved_addresses_are_refused_in_every_spelling(url: str) -> None:
    with pytest.raises(DocumentError, match="private or reserved address"):
        fetch_url(url, limits())


def test_a_6to4_address_of_a_public_ipv4_is_judged_as_that_address() -> None:
    assert not _refused(ipaddress.ip_address("2002:5db8:d822::1"))  # 93.184.216.34
    assert _refused(ipaddress.ip_address("2002:c0a8:101::1"))  # 192.168.1.1


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/file.txt", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http://user:secret@example.com/", "credentials"),
        ("http:///nohost", "no host"),
        ("http://no-such-host.invalid/", "cannot resolve"),
        ("http://[::1/", "not a valid URL"),
        ("http://example.com:99999/", "bad port"),
    ],
)
def test_other_bad_urls_are_refused(url: str, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason):
        fetch_url(url, limits())


def test_a_page_is_fetched_when_private_addresses_are_allowed(site: int) -> None:
    document = fetch_url(f"http://127.0.0.1:{site}/page", limits(allow_private=True))
    assert document.data == PAGE and document.format is DocumentFormat.HTML
    assert document.uri == f"http://127.0.0.1:{site}/page"


def test_every_redirect_hop_is_checked_again(site: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only 127.0.0.2 counts as private here, so the first hop (127.0.0.1) passes and the second must not.
    monkeypatch.setattr(fetch, "_refused", lambda address: str(address) == "127.0.0.2")
    with pytest.raises(DocumentError, match=r"127\.0\.0\.2"):
        fetch_url(f"http://127.0.0.1:{site}/hop", limits())


def test_the_connection_goes_to_the_address_that_was_checked(site: int, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo
    lookups = []

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != "wiki.rebind.test":
            return real(host, *args, **kwargs)
        # The first answer is the one checked; a second lookup (the connection resolving the name
        # again) would get nothing, so the fetch succeeds only if it connects to the checked address.
        lookups.append(host)
        if len(lookups) > 1:
            raise socket.gaierror("the name moved")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", site))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    monkeypatch.setattr(fetch, "_refused", lambda address: False)
    _Site.hosts.clear()
    document = fetch_url(f"http://wiki.rebind.test:{site}/page", limits())
    assert document.data == PAGE
    assert _Site.hosts == [f"wiki.rebind.test:{site}"]
    assert lookups == ["wiki.rebind.test"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/image", "content type 'image/png'"), ("/huge", "over the"), ("/gone", "answered 404")],
)
def test_type_size_and_status_limits(site: int, path: str, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason):
        fetch_url(f"http://127.0.0.1:{site}{path}", limits(allow_private=True, max_bytes=1_000_000))


def test_an_unreachable_url_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DocumentError, match="cannot fetch"):
        fetch_url(f"http://127.0.0.1:{port}/", limits(allow_private=True, timeout_s=5))
