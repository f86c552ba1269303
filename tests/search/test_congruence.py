"""SQLite and OpenSearch agree: the same corpus gives the same BM25 winners and the same fused ranking.

FTS5 and Lucene score BM25 on different scales (and tokenize a little differently), so the legs are
compared by rank: the same ids in the same order, ties sorted by id (STYLE.md §10(d)), on queries
with one clear answer and on queries that match several memories. Fused results go through the one fusion of
:mod:`hivemem.fusion` on both stores (OpenSearch fetches its legs with one ``_msearch``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.model import FusionMethod, RetrievalMode, utcnow
from search import SearchFilter, Store, open_store
from search.capabilities import SearchesLegsTogether
from search.recall import Recaller, RecallParams
from tests.contract.test_memories_contract import make
from tests.opensearch_backend import OpenSearchBackend
from tests.opensearch_spec import SpecValidator

pytestmark = pytest.mark.opensearch

CORPUS = [
    ("Retry policy", "HTTP clients retry three times with exponential backoff and jitter."),
    ("Logging format", "Logs are JSON lines shipped to the central collector."),
    ("Database choice", "Postgres is the primary database for the billing service."),
    ("Queue choice", "RabbitMQ carries the billing events between services."),
    ("Deploy rule", "Deployments happen on Tuesdays from the main branch only."),
    ("Cache layer", "Sessions are cached in Redis with a one hour expiry."),
    ("Feature flags", "The flag XJ9000 disables the legacy importer."),
    ("Auth codename", "Zanzibar is the codename of the authorization service."),
    ("Test policy", "Every bug fix ships with a regression test in the tests folder."),
    ("Office plants", "The office plants are watered on Mondays by the facilities team."),
    ("Kafka lag", "Kafka consumer lag alerts fire after five minutes."),
    ("Backups", "Database backups run nightly and are kept for thirty days."),
]
QUERIES = [
    "exponential backoff",
    "json logs collector",
    "postgres billing database",
    "rabbitmq events",
    "when do deployments happen",
    "redis session cache",
    "what does XJ9000 do",
    "zanzibar",
    "regression tests for bug fixes",
    "watering the plants",
    "kafka consumer lag",
    "nightly backups",
]
# Words shared by several memories: these rank more than one, and the order must agree too.
MULTI_MATCH_QUERIES = ["billing", "database backups", "billing service events", "redis kafka", "the main service"]


@pytest.fixture
def stores(
    tmp_path: Path, opensearch_backend: OpenSearchBackend, embedder: HashEmbedder, spec_validator: SpecValidator | None
) -> Iterator[tuple[Store, Any]]:
    sqlite = open_store(
        f"sqlite:///{tmp_path / 'hive.db'}", embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    opensearch = opensearch_backend.open(embedder, Settings(), spec_validator)
    memories = [make(embedder, content, title=title) for title, content in CORPUS]
    for memory in memories:
        sqlite.put(memory)
    opensearch.put_many(memories)
    yield sqlite, opensearch
    sqlite.drop()
    opensearch.drop()


def _ranked(store: Store, query: str) -> list[str]:
    hits = store.keyword_search(query, SearchFilter(scopes=["p"]), 10)
    return [c.id for c in sorted(hits, key=lambda c: (-round(c.score, 6), c.id))]


def test_bm25_legs_agree(stores: tuple[Store, Any]) -> None:
    sqlite, opensearch = stores
    for query in QUERIES + MULTI_MATCH_QUERIES:
        lite, search = _ranked(sqlite, query), _ranked(opensearch, query)
        assert lite and search, query
        assert lite == search, query  # the same ids in the same order, not only the same winner
    assert all(len(_ranked(sqlite, q)) >= 2 for q in MULTI_MATCH_QUERIES)


@pytest.mark.parametrize("fusion", list(FusionMethod))
def test_fused_recall_agrees(stores: tuple[Store, Any], embedder: HashEmbedder, fusion: FusionMethod) -> None:
    sqlite, opensearch = stores
    assert isinstance(opensearch, SearchesLegsTogether) and not isinstance(sqlite, SearchesLegsTogether)
    params = RecallParams(retrieval_mode=RetrievalMode.BM25, fusion=fusion, decay_weight=0.0)
    where = SearchFilter(scopes=["p"])
    for queries in (["exponential backoff"], ["billing database", "rabbitmq events"], ["kafka lag", "backups"]):
        lite = Recaller(sqlite, embedder, params).recall(queries, where, limit=3, now=utcnow())
        search = Recaller(opensearch, embedder, params).recall(queries, where, limit=3, now=utcnow())
        # Ranks agree. Scores agree closely: this small scope's BM25 leg runs out of documents and is
        # read on its own scale, in Lucene's units (FTS5's are 2.2 times them), so what is left is
        # the two engines' IDF and tokenizing (ln(1 + x) against ln(x)); RRF is exact.
        assert [h.memory.id for h in lite][:2] == [h.memory.id for h in search][:2], queries
        assert all(0.0 < h.score <= 1.0 for h in [*lite, *search]), queries
        if len(queries) == 1:
            tolerance = 0.1 if fusion is FusionMethod.MINMAX else 1e-6
            assert lite[0].score == pytest.approx(search[0].score, rel=tolerance), queries
