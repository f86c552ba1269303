"""Hostile input against a real server: every request gets its answer (never a 5xx), and none of
them holds the server from answering ``/healthz`` within a second or takes its memory past a bound.

The requests are those that stalled or bloated it: a secret scan that backtracked for minutes on a
run of spaces, JSON nested thousands deep (in a body and in an import file), and hundreds of
distinct patterns for ``knowledge match``, each megabytes once compiled.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable

import httpx

from tests.e2e.helpers import HivememServer

HEALTH_WITHIN_S = 1.0
# What the server may grow by over the whole suite: the pattern cache's 64 MiB, a compile's
# transient and the scan, not a gigabyte of patterns kept.
RSS_GROWTH_MAX_BYTES = 400 * 1024 * 1024

Request = Callable[[httpx.Client], httpx.Response]


def _memorize(content: str) -> Request:
    return lambda http: http.post("/v1/memories", json={"title": "Rotation note", "content": content})


def _deep_body(http: httpx.Client) -> httpx.Response:
    deep = '{"query": "x", "filters": ' + "[" * 20_000 + "]" * 20_000 + "}"
    return http.post("/v1/remember", content=deep, headers={"content-type": "application/json"})


def _deep_import(http: httpx.Client) -> httpx.Response:
    header = json.dumps({"kind": "header", "format": "hivemem-export", "version": 1})
    nested = '{"a":' * 30_000 + "1" + "}" * 30_000
    body = f"{header}\n{nested}\n"
    return http.post("/v1/import", content=body, headers={"content-type": "application/x-ndjson"})


def _deep_mcp(http: httpx.Client) -> httpx.Response:
    deep = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + "[" * 20_000 + "]" * 20_000 + "}"
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return http.post("/mcp", content=deep, headers=headers)


def _pattern(i: int) -> Request:
    # Distinct, valid, a few MB each once compiled.
    pattern = f"(?:(?:[a-f]x){{100}}y){{{200 + i}}}q"
    return lambda http: http.post("/v1/knowledge/match", json={"pattern": pattern})


HOSTILE: list[tuple[str, Request]] = [
    ("pwd + 3,000 spaces", _memorize("Rotated the db pwd" + " " * 3_000 + "yesterday.")),
    ("pwd + 9,900 spaces", _memorize("Rotated the db pwd" + " " * 9_900 + "yesterday.")),
    ("pwd = + spaces", _memorize("pwd = " + " " * 9_990 + "x")),
    ("ibm key + tabs", _memorize("ibm_cloud_iam_key" + " \t" * 4_900 + "x")),
    ("token= repeated", _memorize("token=" * 1_600)),
    ("spaced letters", _memorize("A " * 4_990)),
    ("base64 runs", _memorize((base64.b64encode(b"hello world, hello team") + b" ").decode() * 300)),
    ("body 20,000 deep", _deep_body),
    ("import line 30,000 deep", _deep_import),
    ("mcp body 20,000 deep", _deep_mcp),
    *[(f"pattern {i}", _pattern(i)) for i in range(120)],
]


def test_no_hostile_request_holds_healthz_or_the_servers_memory(server: HivememServer) -> None:
    answers: dict[str, int] = {}
    done = threading.Event()

    def attack() -> None:
        try:
            with httpx.Client(base_url=server.url, timeout=600) as http:
                for name, request in HOSTILE:
                    answers[name] = request(http).status_code
        finally:
            done.set()

    with httpx.Client(base_url=server.url, timeout=600) as health:
        assert health.get("/healthz").status_code == 200
        before = server.peak_rss_bytes()
        attacker = threading.Thread(target=attack)
        attacker.start()
        slowest = 0.0
        while not done.is_set():
            began = time.monotonic()
            assert health.get("/healthz").status_code == 200
            slowest = max(slowest, time.monotonic() - began)
        attacker.join()
        grown = server.peak_rss_bytes() - before
    assert len(answers) == len(HOSTILE), answers
    assert [name for name, code in answers.items() if code >= 500] == [], answers
    assert answers["body 20,000 deep"] == answers["mcp body 20,000 deep"] == 400
    assert answers["import line 30,000 deep"] == 422
    assert slowest <= HEALTH_WITHIN_S, f"/healthz took {slowest:.2f} s while hostile requests ran"
    assert grown <= RSS_GROWTH_MAX_BYTES, f"the server grew by {grown / 2**20:.0f} MiB"
