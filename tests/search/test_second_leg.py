"""The second dense leg: a second model's vectors kept by the store (SQLite or OpenSearch), filled in
the background (workers/second_model.py) and fused by recall as one more leg over the other legs' candidates."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.model import Memory, RetrievalMode, new_memory_id, utcnow
from hivemem.schemas import MemoryCreate, RecallRequest
from search.base import SearchFilter
from search.recall import Recaller, RecallParams, leg_weights
from search.sqlite.store import SQLiteStore
from tests.search.conftest import OpenService, with_mode
from workers.second_model import SecondLeg

FIRST, SECOND = HashEmbedder(64), HashEmbedder(32)
MODEL = SECOND.model_id
SCOPE = "github.com/acme/api"
CALLER = Caller(default_scope=SCOPE)


def make(content: str) -> Memory:
    memory = Memory(
        id=new_memory_id(), scope=SCOPE, title=content[:30], content=content, content_hash=content_hash(content)
    )
    memory.embedding = FIRST.embed_passages([memory.embedding_text()])[0]
    memory.embedding_model = FIRST.model_id
    return memory


def second_vectors(memories: Sequence[Memory]) -> list[tuple[Memory, list[float]]]:
    return list(zip(memories, SECOND.embed_passages([m.embedding_text() for m in memories]), strict=True))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(str(tmp_path / "m.db"), embedding_model=FIRST.model_id, dimension=FIRST.dimension)
    yield opened
    opened.close()


def test_leg_weights_split_the_vector_weight() -> None:
    params = RecallParams(bm25_weight=0.4, second_dense_weight=0.25)
    weights = leg_weights(params, {"bm25": [], "dense": [], "dense2": []})
    assert weights == pytest.approx({"bm25": 0.4, "dense": 0.45, "dense2": 0.15})
    assert leg_weights(params, {"bm25": [], "dense": []}) == pytest.approx({"bm25": 0.4, "dense": 0.6})


@pytest.fixture
def second_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"second_embed_model": "hash:32"})


def test_a_server_fills_the_vectors_and_recall_fuses_the_leg(
    second_settings: Settings, open_service: OpenService
) -> None:
    service = open_service(second_settings)
    try:
        assert service.second_leg is not None
        service.parts.start_second_leg()
        retry = service.memorize(MemoryCreate(title="Retry policy", content="retry with exponential backoff"), CALLER)
        service.memorize_many(
            [MemoryCreate(title=f"Note {n}", content=f"the office plant number {n} is watered") for n in range(5)],
            CALLER,
        )
        assert service.second_leg.wait_caught_up(30)
        assert service.second_leg.remaining() == 0
        response = service.remember(RecallRequest(query="exponential backoff", explain=True), CALLER)
        best = response.results[0]
        assert best.id == retry.id
        assert best.explain is not None and best.explain["knn2_rank"] == 1 and best.explain["knn2_score"] > 0
        # A forgotten memory's second vector goes with it.
        service.forget(retry.id, confirm=True, caller=CALLER)
        assert service.store.second_vectors_keep_only("no-such-model") == 5  # type: ignore[attr-defined]
    finally:
        service.close()


def test_writes_of_another_process_are_filled_too(second_settings: Settings, open_service: OpenService) -> None:
    service = open_service(second_settings)
    try:
        service.parts.start_second_leg()
        assert service.second_leg is not None and service.second_leg.wait_caught_up(30)
        # Another writer on the same store (a worker, a CLI): no nudge reaches the filler.
        other = open_service(second_settings.model_copy(update={"second_embed_model": ""}))
        try:
            written = other.memorize(MemoryCreate(title="Elsewhere", content="written by another process"), CALLER)
        finally:
            other.close()
        assert service.second_leg.wait_caught_up(30)
        assert service.second_leg.remaining() == 0
        scored = service.store.second_vector_scores(  # type: ignore[attr-defined]
            MODEL, SECOND.embed_queries(["another process"])[0], [written.id]
        )
        assert [c.id for c in scored] == [written.id]
    finally:
        service.close()


class FailingFirst(HashEmbedder):
    """A real hash embedder whose first ``failures`` passage calls fail, as a model can (out of memory)."""

    def __init__(self, failures: int) -> None:
        super().__init__(32)
        self.failures = failures
        self.lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        with self.lock:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("the model ran out of memory")
        return super().embed_passages(texts)


def test_the_filler_outlives_a_failed_batch(store: SQLiteStore) -> None:
    for n in range(3):
        store.put(make(f"memory number {n}"))
    leg = SecondLeg(store, FailingFirst(1), retry_s=0.05)
    leg.start()
    try:
        assert leg.wait_caught_up(30)
        assert leg.remaining() == 0 and leg.last_failure is None
    finally:
        leg.close()


class BrokenQueries(HashEmbedder):
    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("the second model is gone")


def test_recall_answers_without_the_leg_when_its_model_fails(settings: Settings) -> None:
    service = MemoryService.from_settings(settings)
    try:
        service.memorize(MemoryCreate(title="Retry policy", content="retry with exponential backoff"), CALLER)
        leg = SecondLeg(service.store, SECOND)  # type: ignore[arg-type]
        leg.start()
        assert leg.wait_caught_up(30)
        leg.close()
        where = SearchFilter(scopes=(SCOPE,))
        working = Recaller(service.store, service.embedder, RecallParams(), second=SECOND)
        assert working.recall(["exponential backoff"], where, limit=5, now=utcnow())[0].explain["knn2_rank"] == 1
        broken = Recaller(service.store, service.embedder, RecallParams(), second=BrokenQueries(32))
        hits = broken.recall(["exponential backoff"], where, limit=5, now=utcnow())
        assert hits[0].memory.title == "Retry policy"
        assert hits[0].explain["knn2_rank"] is None
    finally:
        service.close()


def test_bm25_mode_has_no_second_leg(second_settings: Settings) -> None:
    service = MemoryService.from_settings(second_settings)
    try:
        service.parts.start_second_leg()
        service.memorize(MemoryCreate(title="Retry policy", content="retry with exponential backoff"), CALLER)
        assert service.second_leg is not None and service.second_leg.wait_caught_up(30)
        with_mode(service, RetrievalMode.BM25)
        response = service.remember(RecallRequest(query="exponential backoff", explain=True), CALLER)
        assert response.results[0].explain is not None and response.results[0].explain["knn2_rank"] is None
    finally:
        service.close()


def test_the_same_model_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="already the embedding model"):
        Settings(data_dir=tmp_path, embed_model="hash:64", second_embed_model="hash:64")


def test_a_filler_keeps_its_own_model_only(store: SQLiteStore, tmp_path: Path) -> None:
    memory = make("a memory embedded by a second model configured before")
    store.put(memory)
    old = HashEmbedder(16)
    store.put_second_vectors(old.model_id, old.dimension, [(memory, old.embed_passages(["x"])[0])])
    leg = SecondLeg(store, SECOND)
    leg.start()
    try:
        assert leg.wait_caught_up(30)
    finally:
        leg.close()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        assert conn.execute("SELECT model FROM second_vectors").fetchall() == [(MODEL,)]


def test_a_server_starts_the_sleep_timer_and_the_filler_together(second_settings: Settings) -> None:
    service = MemoryService.from_settings(second_settings)
    try:
        assert service.second_leg is not None and not service.second_leg.started
        service.start_background()
        service.start_background()  # a second call starts nothing twice
        assert service.second_leg.started
        assert service.lifecycle._sleep_timer is not None
    finally:
        service.close()


def test_a_one_off_command_touches_the_second_model_only_when_it_embeds(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A CLI call that embeds nothing (``get``, ``memories list``) does not load the second model;
    one that recalls loads it then. Here the model is a folder with no model in it, so each load
    shows in the log (and recall answers without the leg)."""
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    configured = settings.model_copy(update={"second_embed_model": str(not_a_model)})
    MemoryService.from_settings(configured).close()  # a server's: loads now, to know its threads
    assert "not-a-model" in caplog.text
    caplog.clear()
    service = MemoryService.from_settings(configured, lazy_model=True)
    try:
        assert "not-a-model" not in caplog.text
        service.memorize(MemoryCreate(title="Retry policy", content="retry with exponential backoff"), CALLER)
        assert "not-a-model" not in caplog.text
        response = service.remember(RecallRequest(query="exponential backoff"), CALLER)
        assert response.results
        assert "second dense leg skipped" in caplog.text
    finally:
        service.close()
