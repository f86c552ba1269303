"""Re-embedding after a model change: every memory and chunk moves to the new model in the
background, recall keeps answering from the old vectors until the swap, and nothing is lost."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli_main
from api.main import create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from api.services.parts import Parts
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import EmbeddingMismatchError
from hivemem.knowledge_schemas import KnowledgeSearchRequest, KnowledgeStoreRequest
from hivemem.model import Memory, new_memory_id, utcnow
from hivemem.schemas import MemoryCreate, RecallRequest
from hivemem.token_schemas import TokenCreate
from search import SearchFilter
from search.opensearch.setup import recorded_model
from tests.api.conftest import LOCAL_URL
from tests.opensearch_backend import OpenSearchBackend
from workers.documents.sources import FileAccess

SCOPE = "github.com/acme/api"
LOCAL = Caller(principal="admin", default_scope=SCOPE)
MEMORIES = 150  # three batches of the job


def _settings(path: Path, model: str, **extra: object) -> Settings:
    return Settings(data_dir=path, embed_model=model, **extra)  # type: ignore[arg-type]


def _filled(path: Path, opened: MemoryService | None = None) -> None:
    """A store built with hash:32: memories over three of the job's batches, and a document."""
    service = opened or MemoryService.from_settings(_settings(path, "hash:32"))
    try:
        notes = [
            MemoryCreate(title=f"Service {i}", content=f"Service number {i} listens on port {8000 + i}.", scope=SCOPE)
            for i in range(MEMORIES)
        ]
        service.memorize_many(notes, LOCAL)
        text = "Every deploy needs a rollback plan written before the release."
        service.knowledge.store_text(KnowledgeStoreRequest(key="rules", text=text, scope=SCOPE), LOCAL)
    finally:
        service.close()


class GatedEmbedder(HashEmbedder):
    """The new model, holding its second batch until the test lets it go."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.batches = 0
        self.first_batch: list[str] = []
        self.holding = threading.Event()
        self.release = threading.Event()

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches += 1
        if self.batches == 1:
            self.first_batch = list(texts)
        if self.batches == 2:
            self.holding.set()
            assert self.release.wait(60), "the test never released the re-embed"
        return super().embed_passages(texts)


def _recall(service: MemoryService, query: str) -> list[str]:
    found = service.remember(RecallRequest(query=query, scope=SCOPE), LOCAL)
    return [r.content for r in found.results]


OpenService = Callable[[], MemoryService]


@pytest.fixture(params=["sqlite", pytest.param("opensearch", marks=pytest.mark.opensearch)])
def open_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenService]:
    """Opens a service on one store (the same each time), built with hash:32."""
    if request.param == "sqlite":
        yield lambda: MemoryService.from_settings(_settings(tmp_path, "hash:32"))
        return
    backend: OpenSearchBackend = request.getfixturevalue("opensearch_backend")
    if not backend.has_knn:
        pytest.skip(backend.no_knn_reason)
    validator = request.getfixturevalue("spec_validator")
    prefix = f"test_{uuid.uuid4().hex[:16]}"

    def on_opensearch() -> MemoryService:
        embedder = HashEmbedder(32)
        store = backend.open(embedder, Settings(), validator, prefix, needs_knn=True)
        service = MemoryService(Parts(_settings(tmp_path, "hash:32"), store, QueuedEmbedder(embedder, max_batch=64)))
        return service

    yield on_opensearch
    # The store is now of whichever model the test left it on: open it with that one to drop it.
    recorded = recorded_model(backend.url_for(prefix))
    assert recorded is not None
    leftover = backend.open(HashEmbedder(recorded[1]), Settings(), None, prefix)
    leftover.drop()


def test_recall_keeps_answering_while_the_store_moves_to_the_new_model(
    tmp_path: Path, open_service: OpenService
) -> None:
    _filled(tmp_path, open_service())
    service = open_service()
    errors: list[BaseException] = []
    answered = 0
    finished = threading.Event()

    def recall_all_along() -> None:
        nonlocal answered
        while not finished.is_set():
            try:
                assert _recall(service, "which port does service 7 listen on")
                answered += 1
            except BaseException as exc:
                errors.append(exc)
                return

    target = GatedEmbedder(64)
    try:
        job = service.start_reembed(target, LOCAL)
        assert job.kind == "reembed" and job.state in ("queued", "running")
        reader = threading.Thread(target=recall_all_along)
        reader.start()
        assert target.holding.wait(30), "the re-embed did not reach its second batch"
        # Mid-way: the first batch is staged, nothing is swapped; recall serves the old vectors.
        midway = service.job(job.id)
        assert midway.state == "running" and 0 < midway.progress < 1
        assert service.store.embedding_model == "hash-32" and service.embedder.model_id == "hash-32"
        assert "Service number 7 listens on port 8007." in _recall(service, "which port does service 7 listen on")
        # A memory written meanwhile gets the old model's vector, and the new one before the swap.
        late = service.memorize(
            MemoryCreate(title="Late cache note", content="The cache warms up in ninety seconds.", scope=SCOPE), LOCAL
        )
        assert len(service.store.get(late.id).embedding or []) == 32
        # Memories of the staged first batch change meanwhile: one is recalled (access counted), one is
        # forgotten. The swap keeps the first's count and does not bring the second back.
        # Which memories a batch holds is the store's order (SQLite: insertion; OpenSearch: id).
        staged = [
            m.id
            for m in service.store.list_memories(SearchFilter(scopes=[SCOPE]), 1000)
            if m.embedding_text() in target.first_batch
        ]
        first, second = sorted(staged)[:2]
        service.store.record_access([first], utcnow())
        service.forget(second, confirm=True, caller=LOCAL, scope=SCOPE)

        target.release.set()
        done = service.wait_for_reembed(timeout_s=300)
        finished.set()
        reader.join(30)
        assert done.state == "done" and done.progress == 1.0, done
        assert done.result == {"model": "hash-64", "dimension": 64, "memories": MEMORIES + 1, "chunks": 1}
        assert errors == [] and answered > 0
        assert (service.store.embedding_model, service.store.dimension, service.embedder.model_id) == (
            "hash-64",
            64,
            "hash-64",
        )
        assert all(len(m.embedding or []) == 64 for m in service.store.get_many([late.id]))
        assert service.store.get(first).access_count == 1
        assert service.store.get_many([second]) == []
        assert service.store.count([SCOPE]) == MEMORIES
        assert "The cache warms up in ninety seconds." in _recall(service, "how long does the cache take to warm up")
        chunks = service.knowledge.search(
            KnowledgeSearchRequest(query="rollback plan before the release", scope=SCOPE), LOCAL, FileAccess()
        )
        assert chunks.results and "rollback plan" in chunks.results[0].text
        assert [e.detail["model"] for e in service.store.audit_log() if e.action == "reembed"] == ["hash-64"]
        # A write embedded with the old model and arriving after the swap is refused, not stored.
        stale = Memory(
            id=new_memory_id(),
            scope=SCOPE,
            title="Stale",
            content="Embedded before the swap.",
            content_hash="0" * 64,
            embedding=[0.1] * 64,
            embedding_model="hash-32",
        )
        with pytest.raises(EmbeddingMismatchError, match="re-embedded meanwhile"):
            service.store.put(stale)
    finally:
        finished.set()
        target.release.set()
        service.close()


def test_a_server_started_with_another_model_re_embeds_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _filled(tmp_path)
    with pytest.raises(EmbeddingMismatchError):
        MemoryService.from_settings(_settings(tmp_path, "hash:64", reembed_on_model_change=False))
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    # A one-shot command works on the store as it is (its own model), and re-embeds nothing.
    assert cli_main(["remember", "service 3 port", "--scope", SCOPE]) == 0
    assert "Service number 3 listens on port 8003." in capsys.readouterr().out
    unchanged = MemoryService.from_settings(_settings(tmp_path, "hash:32"))
    try:
        assert unchanged.store.embedding_model == "hash-32" and unchanged.parts.reembedding is None
    finally:
        unchanged.close()
    assert cli_main(["reembed"]) == 0
    assert "re-embedded with hash-64" in capsys.readouterr().out
    assert cli_main(["reembed"]) == 0
    assert "nothing to do: the store holds hash-64 vectors" in capsys.readouterr().out

    settings = _settings(tmp_path, "hash:16", team=True)
    service = MemoryService.from_settings(settings)
    try:
        admin = service.tokens.create(TokenCreate(name="root", grants=["*:admin"]), LOCAL).token
        reader = service.tokens.create(TokenCreate(name="ray", grants=[f"{SCOPE}:read"]), LOCAL).token
        with TestClient(create_app(settings, service), base_url=LOCAL_URL) as client:
            assert client.get("/v1/reembed", headers={"Authorization": f"Bearer {reader}"}).status_code == 403
            watched = client.get("/v1/reembed", headers={"Authorization": f"Bearer {admin}"})
            assert watched.status_code == 200 and watched.json()["kind"] == "reembed"
            done = service.wait_for_reembed(timeout_s=300)
            assert done.state == "done" and done.result is not None and done.result["model"] == "hash-16"
            found = client.post(
                "/v1/remember",
                json={"query": "service 3 port", "scope": SCOPE},
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert "Service number 3 listens on port 8003." in [r["content"] for r in found.json()["results"]]
    finally:
        service.close()
