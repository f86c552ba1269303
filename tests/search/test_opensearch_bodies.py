"""Every body the OpenSearch store can send, validated against the OpenSearch API spec, with no server.

These cover what osmem-server cannot run (k-NN with a filter, the hybrid query, search pipelines,
the knn_vector template) and show that the validator catches broken bodies.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.cli.opensearch import DEFAULT_DIMENSION, DEFAULT_MODEL_ID
from hivemem.config import Settings
from hivemem.model import FusionMethod, MemoryState, MemoryType
from search.base import ChunkFilter, SearchFilter
from search.neighbours import neighbour_filter
from search.opensearch import bodies, knowledge_bodies
from search.opensearch.bodies import IndexNames, IndexOptions
from search.opensearch.setup import exported_files, templates
from search.opensearch.tuning import OpenSearchTuning
from search.recall_params import RecallParams
from tests.opensearch_backend import NO_SPEC_REASON
from tests.opensearch_spec import SPEC_DIR, SpecValidator, SpecViolation

REPO = Path(__file__).resolve().parents[2]
DIM = 8
NAMES = IndexNames("hivemem")
WHERE = SearchFilter(
    scopes=["github.com/acme/api", ""],
    memory_types=[MemoryType.DECISION],
    tags=["db"],
    created_after=datetime(2026, 1, 1, tzinfo=UTC),
    created_before=datetime(2026, 12, 1, tzinfo=UTC),
    exclude_ids=["x"],
)
OPTIONS = [
    IndexOptions.of(),
    IndexOptions.of(
        OpenSearchTuning(
            opensearch_knn_engine="faiss", opensearch_space_type="innerproduct", opensearch_hybrid="native"
        ),
        RecallParams(fusion=FusionMethod.RRF, bm25_weight=0.3),
    ),
]


@pytest.fixture(scope="module")
def validator() -> SpecValidator:
    if not SPEC_DIR.is_dir():
        pytest.skip(NO_SPEC_REASON)
    checked = SpecValidator()
    # The store's searches go to the alias; teach the validator the mapping behind it.
    template = bodies.memory_template(NAMES, IndexOptions.of(), embedding_model="m", dimension=DIM)
    checked.validate_index_body({**template["template"], "aliases": {NAMES.memories: {}}}, NAMES.index(NAMES.memories))
    chunks = knowledge_bodies.chunks_template(NAMES, IndexOptions.of(), dimension=DIM)
    checked.validate_index_body({**chunks["template"], "aliases": {NAMES.chunks: {}}}, NAMES.index(NAMES.chunks))
    return checked


@pytest.mark.parametrize("options", OPTIONS, ids=["lucene-cosine", "faiss-innerproduct"])
def test_index_templates_and_create_bodies_are_valid(validator: SpecValidator, options: IndexOptions) -> None:
    for alias, template in templates(NAMES, options, embedding_model="m", dimension=DIM).items():
        validator.validate_request("PUT", f"/_index_template/{NAMES.template(alias)}", json.dumps(template))
        body = {**template["template"], "aliases": {alias: {"is_write_index": True}}}
        validator.validate_request("PUT", f"/{NAMES.index(alias)}", json.dumps(body))


@pytest.mark.parametrize("fusion", list(FusionMethod))
@pytest.mark.parametrize("options", OPTIONS, ids=["lucene-cosine", "faiss-innerproduct"])
def test_search_pipelines_are_valid(validator: SpecValidator, options: IndexOptions, fusion: FusionMethod) -> None:
    pipeline = bodies.search_pipeline(options, fusion)
    validator.validate_request("PUT", f"/_search/pipeline/{bodies.pipeline_name(NAMES, fusion)}", json.dumps(pipeline))
    processor = pipeline["phase_results_processors"][0]
    if fusion is FusionMethod.RRF:
        assert processor["score-ranker-processor"]["combination"] == {"technique": "rrf", "rank_constant": 60}
    else:
        weights = processor["normalization-processor"]["combination"]["parameters"]["weights"]
        assert weights == [options.bm25_weight, pytest.approx(1 - options.bm25_weight)]


@pytest.mark.parametrize("text", ["kafka consumer lag", "the of and"])
def test_knn_keyword_hybrid_and_msearch_bodies_are_valid(validator: SpecValidator, text: str) -> None:
    words = bodies.query_words(text)
    assert words is not None
    vector = [0.5] * DIM
    knn = bodies.knn_search(vector, WHERE, 10, IndexOptions.of())
    keyword = bodies.keyword_search(words[0], words[1], WHERE, 10)
    hybrid = bodies.hybrid_search(words[0], words[1], vector, WHERE, 10, IndexOptions.of())
    for body in (knn, keyword, hybrid):
        validator.validate_request("POST", f"/{NAMES.memories}/_search", json.dumps(body))
    ndjson = "\n".join(json.dumps(line) for line in bodies.msearch_lines(NAMES.memories, [keyword, knn])) + "\n"
    validator.validate_request("POST", "/_msearch", ndjson)
    # The filter sits inside the k-NN query and inside the BM25 bool: never a post-filter.
    clause = knn["query"]["knn"]["embedding"]
    assert clause["filter"]["bool"]["filter"] == bodies.search_filter(WHERE)
    assert keyword["query"]["bool"]["filter"] == bodies.search_filter(WHERE)
    assert "post_filter" not in knn and "post_filter" not in keyword


@pytest.mark.parametrize("options", OPTIONS, ids=["lucene-cosine", "faiss-innerproduct"])
def test_the_neighbour_search_of_a_planned_write_is_valid(validator: SpecValidator, options: IndexOptions) -> None:
    body = bodies.knn_search([0.5] * DIM, neighbour_filter("github.com/acme/api"), 5, options)
    validator.validate_request("POST", f"/{NAMES.memories}/_search", json.dumps(body))
    # One scope, every state: a write resolves against archived and consolidated memories too.
    where = body["query"]["knn"]["embedding"]["filter"]["bool"]["filter"]
    assert {"terms": {"scope": ["github.com/acme/api"]}} in where
    assert {"terms": {"state": [s.value for s in MemoryState]}} in where


@pytest.mark.parametrize("text", ["zorblaxite coolant pump", "the of and"])
def test_chunk_knn_and_keyword_bodies_are_valid(validator: SpecValidator, text: str) -> None:
    words = bodies.query_words(text)
    assert words is not None
    where = ChunkFilter(scopes=["github.com/acme/api", ""], uri="/docs/manual.pdf")
    knn = knowledge_bodies.knn_chunks([0.5] * DIM, where, 10, IndexOptions.of())
    keyword = knowledge_bodies.match_chunks(words[0], words[1], where, 10)
    for body in (knn, keyword):
        validator.validate_request("POST", f"/{NAMES.chunks}/_search", json.dumps(body))
    # The scope and source filter sits inside the k-NN query and the BM25 bool, never after them.
    assert knn["query"]["knn"]["embedding"]["filter"]["bool"]["filter"] == knowledge_bodies.chunk_filter(where)
    assert keyword["query"]["bool"]["filter"] == knowledge_bodies.chunk_filter(where)


def _broken_knn(mutate: str) -> dict[str, object]:
    body = bodies.knn_search([0.5] * DIM, WHERE, 5, IndexOptions.of())
    clause = body["query"]["knn"]["embedding"]
    if mutate == "misspelled":
        clause["filterr"] = clause.pop("filter")
    elif mutate == "no vector":
        del clause["vector"]
    elif mutate == "k zero":
        clause["k"] = 0
    elif mutate == "k and min_score":
        clause["min_score"] = 0.5
    elif mutate == "wrong dimension":
        clause["vector"] = [0.5] * (DIM - 1)
    elif mutate == "unknown top key":
        body["sizee"] = 3
    elif mutate == "unknown query":
        body["query"] = {"knnn": body["query"]["knn"]}
    return body


@pytest.mark.parametrize(
    "mutate",
    ["misspelled", "no vector", "k zero", "k and min_score", "wrong dimension", "unknown top key", "unknown query"],
)
def test_validator_rejects_broken_search_bodies(validator: SpecValidator, mutate: str) -> None:
    with pytest.raises(SpecViolation):
        validator.validate_request("POST", f"/{NAMES.memories}/_search", json.dumps(_broken_knn(mutate)))


def test_validator_rejects_broken_hybrid_pipelines_and_mappings(validator: SpecValidator) -> None:
    words = bodies.query_words("kafka")
    assert words is not None
    hybrid = bodies.hybrid_search(words[0], words[1], [0.5] * DIM, WHERE, 5, IndexOptions.of())
    nested = {"query": {"bool": {"must": [hybrid["query"]]}}}
    too_many = {"query": {"hybrid": {"queries": [{"match_all": {}}] * 6}}}
    for body in (nested, too_many):
        with pytest.raises(SpecViolation, match="hybrid"):
            validator.validate_search(body, NAMES.memories)
    rrf = bodies.search_pipeline(IndexOptions.of(), FusionMethod.RRF)
    rrf["phase_results_processors"][0]["score-ranker-processor"]["combination"]["rank_constant"] = 0
    with pytest.raises(SpecViolation, match="rank_constant"):
        validator.validate_pipeline(rrf)
    minmax = bodies.search_pipeline(IndexOptions.of(), FusionMethod.MINMAX)
    minmax["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"]["weights"] = [1, 1]
    with pytest.raises(SpecViolation, match="sum to 1"):
        validator.validate_pipeline(minmax)
    template = bodies.memory_template(NAMES, IndexOptions.of(), embedding_model="m", dimension=DIM)
    template["template"]["mappings"]["properties"]["embedding"]["method"]["engine"] = "lucen"
    with pytest.raises(SpecViolation, match="engine"):
        validator.validate_template(template)
    with pytest.raises(SpecViolation, match="no spec schema"):
        validator.validate_request("POST", "/_nonsense", "{}")


def test_validator_reads_yaml_1_2() -> None:
    if not SPEC_DIR.is_dir():
        pytest.skip(NO_SPEC_REASON)
    from tests.opensearch_spec import load_registry

    document = load_registry().contents("https://opensearch-api-spec.local/spec/schemas/_common.mapping.yaml")
    enum = document["components"]["schemas"]["TermVectorOption"]["enum"]
    assert "no" in enum and "yes" in enum


def test_deploy_json_is_what_the_builders_produce() -> None:
    defaults = Settings.model_construct()
    expected = exported_files(
        IndexNames(defaults.opensearch_index),
        IndexOptions.of(OpenSearchTuning.model_construct(), RecallParams.model_construct()),
        embedding_model=DEFAULT_MODEL_ID,
        dimension=DEFAULT_DIMENSION,
    )
    folder = REPO / "deploy" / "opensearch"
    assert sorted(p.name for p in folder.glob("*.json")) == sorted(expected)
    for name, body in expected.items():
        assert json.loads((folder / name).read_text(encoding="utf-8")) == body, (
            f"{name} is stale: run `hivemem opensearch setup --export deploy/opensearch`"
        )


def test_stopwords_match_the_sqlite_store() -> None:
    from search.query_terms import ENGLISH_STOPWORDS, LUCENE_STOPWORDS
    from search.sqlite.sql import fts_query

    # Both stores take their terms from search.query_terms: Lucene's 33 English stopwords (which the
    # search analyzer drops too) and the words questions are made of.
    assert len(LUCENE_STOPWORDS) == 33 and LUCENE_STOPWORDS < ENGLISH_STOPWORDS
    assert {"the", "of", "with", "how", "do", "we", "our", "what", "can"} <= ENGLISH_STOPWORDS
    assert fts_query("The rollout of THE service") == '"rollout" OR "service"'
    assert fts_query("how do we release to production?").startswith('"release" OR "production" OR ')
    assert bodies.query_words("The rollout of THE service") == ("rollout service", False)
    assert bodies.query_words("What can our team roll out") == ("team roll", False)
    # The words of one meaning (search.query_terms) reach both stores alike.
    assert fts_query("prod") == '"prod" OR "production"' and bodies.query_words("prod") == ("prod production", False)
    assert bodies.query_words("the of") == ("the of", True)
    assert bodies.query_words("?!") is None


@pytest.mark.parametrize("space", ["cosinesimil", "innerproduct", "l2"])
@pytest.mark.parametrize("cosine", [1.0, 0.5, 0.0, -0.6])
def test_knn_scores_convert_back_to_cosine(space: str, cosine: float) -> None:
    # The k-NN plugin's score for unit vectors with this cosine, per space type.
    if space == "cosinesimil":
        score = (1 + cosine) / 2
    elif space == "innerproduct":
        score = cosine + 1 if cosine >= 0 else 1 / (1 - cosine)
    else:
        score = 1 / (1 + (2 - 2 * cosine))
    assert bodies.score_to_cosine(score, space) == pytest.approx(cosine)
