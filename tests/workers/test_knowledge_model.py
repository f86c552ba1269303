"""With the real model: each fixture document is found by a question that shares none of its rare words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.knowledge import KnowledgeService
from api.services.parts import Parts
from hivemem.config import Settings
from hivemem.knowledge_schemas import IngestRequest, KnowledgeSearchRequest
from search import open_store
from tests.documents import GOOD_DOCUMENTS, write_good
from workers.documents.sources import FileAccess

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
pytest.importorskip("pypdfium2", reason="the ingest extra is not installed")
pytest.importorskip("fpdf", reason="fpdf2 (dev extra) makes the PDF fixtures")
pytestmark = pytest.mark.model

SCOPE = "github.com/acme/docs"


@pytest.fixture(scope="module")
def knowledge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeService]:
    from workers.models.embed import TransformersEmbedder

    folder = tmp_path_factory.mktemp("docs")
    write_good(folder)
    embedder = TransformersEmbedder()
    store = open_store(
        f"sqlite:///{folder / 'hive.db'}", embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    parts = Parts(Settings(data_dir=folder), store, embedder)
    service = KnowledgeService(parts)
    report = service.ingest(IngestRequest(paths=[str(folder)], scope=SCOPE), Caller(default_scope=SCOPE), FileAccess())
    assert report.indexed == len(GOOD_DOCUMENTS) and report.failed == 0
    yield service
    parts.close()


@pytest.mark.parametrize("name", sorted(GOOD_DOCUMENTS))
def test_a_paraphrased_question_finds_the_document_and_cites_where(knowledge: KnowledgeService, name: str) -> None:
    rare, question, where = GOOD_DOCUMENTS[name]
    assert rare not in question
    found = knowledge.search(
        KnowledgeSearchRequest(query=question, scope=SCOPE, limit=3), Caller(default_scope=SCOPE), FileAccess()
    ).results
    top = next((hit for hit in found if Path(hit.source).name == name), None)
    assert top is not None, [(h.source, h.text[:60]) for h in found]
    assert top is found[0], [(h.source, h.score) for h in found]
    if isinstance(where, int):
        assert top.page == where
    elif where:
        assert where in top.section


def test_a_document_chunk_is_read_past_a_memorys_window_and_never_past_the_models() -> None:
    from workers.models.embed import TransformersEmbedder

    embedder = TransformersEmbedder(max_length=256, document_max_length=100_000)
    # About 300 tokens in which only the last sentence differs.
    lead = "The pump station logs pressure readings every minute and archives them nightly. " * 20
    one, other = lead + "Valve seven is replaced in May.", lead + "The harbour crane moves to pier four."
    passages = embedder.embed_passages([one, other])
    assert passages[0] == passages[1]  # a memory's window ends before the difference
    documents = embedder.embed_documents([one, other, lead * 10])  # the last is past 512 tokens
    assert documents[0] != documents[1]  # the document window reads it
    assert len(documents[2]) == embedder.dimension  # capped at the model's 512 positions, no error
