"""With the real model: each fixture document is found by a question that shares none of its rare words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.knowledge_service import KnowledgeService
from api.service import Caller
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
    from workers.embed import TransformersEmbedder

    folder = tmp_path_factory.mktemp("docs")
    write_good(folder)
    embedder = TransformersEmbedder()
    store = open_store(
        f"sqlite:///{folder / 'hive.db'}", embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    service = KnowledgeService(Settings(), store, embedder)
    report = service.ingest(IngestRequest(paths=[str(folder)], scope=SCOPE), Caller(default_scope=SCOPE), FileAccess())
    assert report.indexed == len(GOOD_DOCUMENTS) and report.failed == 0
    yield service
    store.close()


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
