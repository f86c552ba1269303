"""A document that cannot be read now (a site down) is read, searched and matched in its indexed
copy, saying so; one never indexed is still the error it was."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import DocumentError
from hivemem.knowledge_schemas import KnowledgeMatchRequest, KnowledgeReadRequest, KnowledgeSearchRequest
from workers.documents.sources import FileAccess

SCOPE = "github.com/acme/wiki"
PAGE = (
    b"<html><head><title>Runbook</title></head><body><article><h1>Queues</h1>"
    b"<p>Restart the zorbit queue with the drain flag first.</p></article></body></html>"
)


class _Wiki(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryService]:
    # Private addresses allowed (the site is on loopback); every search fetches the URL again.
    monkeypatch.setenv("HIVEMEM_KNOWLEDGE_URL_MAX_AGE_S", "0")
    settings = Settings(data_dir=tmp_path, embed_model="hash:64", knowledge_allow_private_urls=True)
    opened = MemoryService.from_settings(settings)
    try:
        yield opened
    finally:
        opened.close()


def test_a_site_that_went_down_is_read_searched_and_matched_in_its_indexed_copy(service: MemoryService) -> None:
    wiki = ThreadingHTTPServer(("127.0.0.1", 0), _Wiki)
    threading.Thread(target=wiki.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{wiki.server_address[1]}/runbook"
    caller, files, knowledge = Caller(default_scope=SCOPE), FileAccess(), service.knowledge
    query = KnowledgeSearchRequest(query="restart the queue", source=url)
    assert knowledge.search(query, caller, files).indexed == "indexed"
    live = knowledge.read(KnowledgeReadRequest(source=url), caller, files)
    assert live.stored is False
    wiki.shutdown()
    wiki.server_close()

    copy = knowledge.read(KnowledgeReadRequest(source=url), caller, files)
    assert copy.stored is True and copy.text == live.text and copy.title == "Runbook"
    found = knowledge.search(query, caller, files)
    assert found.indexed == "stored" and "zorbit" in found.results[0].text
    matched = knowledge.match(KnowledgeMatchRequest(pattern=r"zorbit \w+", source=url), caller, files)
    assert [m.match for m in matched.matches] == ["zorbit queue"]
    # A page of the same site that was never indexed: the fetch error, as before.
    with pytest.raises(DocumentError, match="cannot fetch"):
        knowledge.read(KnowledgeReadRequest(source=url + "-other"), caller, files)
