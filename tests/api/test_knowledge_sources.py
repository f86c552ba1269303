"""GET /v1/knowledge/sources: a team's index lists a page at a time, as the MCP `sources` command does."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import ValidationError
from hivemem.knowledge_schemas import KnowledgeStoreRequest
from tests.api.conftest import LOCAL_URL

SCOPE = "github.com/acme/docs"
HEADERS = {"X-Hivemem-Scope": SCOPE}


def test_the_documents_are_listed_a_page_at_a_time(settings: Settings) -> None:
    with TestClient(create_app(settings), base_url=LOCAL_URL) as client:
        service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
        for n in range(230):
            stored = KnowledgeStoreRequest(key=f"note-{n:03}", text=f"Note {n} of the runbook.", scope=SCOPE)
            service.knowledge.store_text(stored, Caller(default_scope=SCOPE))
        service.knowledge.store_text(KnowledgeStoreRequest(key="glossary", text="Terms.", scope=""), Caller())

        first = client.get("/v1/knowledge/sources", headers=HEADERS).json()
        assert (len(first["sources"]), first["total"], first["next_offset"]) == (100, 231, 100)
        assert first["sources"][0]["uri"] == "key:glossary"  # global first, then the scope, by uri
        uris = [s["uri"] for s in first["sources"]]
        offset = first["next_offset"]
        while offset is not None:
            page = client.get("/v1/knowledge/sources", params={"offset": offset}, headers=HEADERS).json()
            uris += [s["uri"] for s in page["sources"]]
            offset = page["next_offset"]
        assert uris == ["key:glossary", *(f"key:note-{n:03}" for n in range(230))]  # each once, in order

        small = client.get("/v1/knowledge/sources", params={"limit": 7, "offset": 228}, headers=HEADERS).json()
        assert [s["uri"] for s in small["sources"]] == ["key:note-227", "key:note-228", "key:note-229"]
        assert small["next_offset"] is None
        past = client.get("/v1/knowledge/sources", params={"offset": 500}, headers=HEADERS).json()
        assert (past["sources"], past["total"], past["next_offset"]) == ([], 231, None)
        for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "many"}):
            refused = client.get("/v1/knowledge/sources", params=bad, headers=HEADERS)
            assert refused.status_code == 422, (bad, refused.text)


def test_a_document_over_the_chunk_cap_is_refused_and_indexes_nothing(settings: Settings) -> None:
    # 54 KB of headings made 5,000 chunks (one a section): refused whole, with the count and the cap.
    # (33 KB here, under the size indexed within the request, against a cap of 1,000.)
    headings = "".join(f"# Part {n}\n\nStep {n}.\n\n" for n in range(1500))  # 33 KB: indexed in the request
    capped = settings.model_copy(update={"knowledge_max_chunks": 1000})
    with TestClient(create_app(capped), base_url=LOCAL_URL) as client:
        params = {"name": "headings.md", "scope": SCOPE}
        refused = client.put("/v1/knowledge/documents", params=params, content=headings.encode())
        assert refused.status_code == 422, refused.text
        assert "over the limit of 1,000 a document" in refused.json()["message"]
        (listed,) = client.get("/v1/knowledge/sources", headers=HEADERS).json()["sources"]
        assert listed["chunk_count"] == 0 and "1,500 chunks" in listed["last_error"]
        hits = client.post("/v1/knowledge/search", json={"query": "Step 42", "scope": SCOPE}).json()["results"]
        assert hits == []
        within = client.put("/v1/knowledge/documents", params=params, content=headings[:20_000].encode())
        assert within.status_code == 201 and within.json()["chunks"] <= 1000


def test_an_upload_name_with_control_characters_is_refused(settings: Settings) -> None:
    with TestClient(create_app(settings), base_url=LOCAL_URL) as client:
        for name in ("notes\x00.md", "notes\x1b[31m.md", "two\nlines.md", "del\x7f.md"):
            refused = client.put("/v1/knowledge/documents", params={"name": name, "scope": SCOPE}, content=b"# Hi\n")
            assert refused.status_code == 422, (name, refused.text)
            assert refused.json()["field"] == "name"
        service: MemoryService = client.app.state.service  # type: ignore[attr-defined]
        with pytest.raises(ValidationError, match="control characters"):  # the service too, not only the route
            service.knowledge.upload("bell\x07.md", b"# Hi\n", Caller(default_scope=SCOPE))
        assert client.get("/v1/knowledge/sources", headers=HEADERS).json()["total"] == 0
