"""What the contract suite does not show about the OpenSearch store: URLs, bad servers, claims across
processes, bulk import, msearch in recall, native hybrid, and ``hivemem opensearch setup``."""

from __future__ import annotations

import multiprocessing
import socket
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch

from api.cli import main
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.errors import ConfigError, EmbeddingMismatchError, StoreError, StoreUnavailableError
from hivemem.model import DuplicatePolicy, FusionMethod, RetrievalMode, WriteOutcome, utcnow
from hivemem.resolution import resolve
from search import SearchFilter, open_store
from search.base import ChunkFilter
from search.capabilities import LegQuery, SearchesLegsTogether
from search.opensearch import OpenSearchStore
from search.opensearch.client import parse_url
from search.opensearch.docs import claim_id, sleep_lease_id, to_iso
from search.opensearch.tuning import OpenSearchTuning
from search.recall import Recaller, RecallParams
from tests.contract.test_memories_contract import make
from tests.opensearch_backend import NO_SPEC_REASON, OpenSearchBackend
from tests.opensearch_spec import SpecValidator

pytestmark = pytest.mark.opensearch


@pytest.fixture
def store(
    opensearch_backend: OpenSearchBackend, embedder: HashEmbedder, spec_validator: SpecValidator | None
) -> Iterator[Any]:
    opened = opensearch_backend.open(embedder, Settings(), spec_validator)
    yield opened
    opened.drop()


def test_urls_parse_with_credentials_and_index() -> None:
    target = parse_url("opensearch+https://alice:s%40cret@search.example:9243/?index=team_a")
    assert (target.host, target.port, target.use_ssl) == ("search.example", 9243, True)
    assert (target.username, target.password, target.index) == ("alice", "s@cret", "team_a")
    assert parse_url("opensearch+http://localhost").port == 9200
    assert "alice" not in target.display


@pytest.mark.parametrize(
    "url",
    ["opensearch+http://", "opensearch+http://h:9200/path", "opensearch+http://h:9200/?shards=3", "opensearch+ftp://h"],
)
def test_bad_opensearch_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        open_store(url, embedding_model="m", dimension=8)


def test_bad_index_prefix_is_a_config_error(opensearch_backend: OpenSearchBackend) -> None:
    with pytest.raises(ConfigError, match="prefix"):
        open_store(f"{opensearch_backend.url}/?index=Bad*Name", embedding_model="m", dimension=8)


def test_unreachable_server_is_a_clear_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens once the socket closes
    monkeypatch.setenv("HIVEMEM_OPENSEARCH_TIMEOUT_S", "2")
    monkeypatch.setenv("HIVEMEM_OPENSEARCH_MAX_RETRIES", "0")
    with pytest.raises(StoreUnavailableError, match=f"cannot reach OpenSearch at http://127.0.0.1:{port}"):
        open_store(f"opensearch+http://127.0.0.1:{port}", embedding_model="m", dimension=8, settings=Settings())


def test_open_store_picks_opensearch_and_refuses_another_model_or_dimension(
    opensearch_backend: OpenSearchBackend, embedder: HashEmbedder
) -> None:
    url = opensearch_backend.url_for()
    first = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
    try:
        assert type(first).__name__ == "OpenSearchStore"
        with pytest.raises(EmbeddingMismatchError, match="hash-64"):
            open_store(url, embedding_model=embedder.model_id, dimension=128)
        with pytest.raises(EmbeddingMismatchError):
            open_store(url, embedding_model="other-model", dimension=embedder.dimension)
        again = open_store(url, embedding_model=embedder.model_id, dimension=embedder.dimension)
        again.close()
    finally:
        first.drop()


def test_a_stale_claim_is_taken_over(store: Any, embedder: HashEmbedder) -> None:
    # A writer died between its claim and its memory: the claim names a memory that never came.
    memory = make(embedder, "Claimed by a writer that crashed.")
    stale = {
        "memory_id": "ghost",
        "scope": memory.scope,
        "content_hash": memory.content_hash,
        "claimed_at": to_iso(datetime.now(UTC) - timedelta(minutes=5)),
    }
    store.client.index(index=store.names.claims, id=claim_id(memory.scope, memory.content_hash), body=stale)
    assert store.put(memory) is True
    assert store.find_by_hash(memory.scope, memory.content_hash) == store.get(memory.id)


def test_changing_content_moves_the_claim(store: Any, embedder: HashEmbedder) -> None:
    memory = make(embedder, "First wording of the fact.")
    store.put(memory)
    reworded = make(embedder, "Second wording of the fact.", id=memory.id)
    store.put(reworded, DuplicatePolicy.OVERWRITE)
    assert store.find_by_hash("p", memory.content_hash) is None
    assert store.find_by_hash("p", reworded.content_hash) is not None
    store.put(make(embedder, "First wording of the fact."))  # the old content is free again
    assert store.count() == 2


def _resolve_many(url: str, model: str, dimension: int, content: str, times: int) -> None:
    embedder = HashEmbedder(dimension)
    store = open_store(url, embedding_model=model, dimension=dimension)
    try:
        for _ in range(times):
            incoming = make(embedder, content)
            store.write_resolved(incoming, lambda existing, m=incoming: resolve(m, existing, utcnow()))
    finally:
        store.close()


def test_write_resolved_is_atomic_across_processes(store: Any, embedder: HashEmbedder) -> None:
    url = same_prefix_url(store)
    content = "Two processes learn the same fact at once."
    spawn = multiprocessing.get_context("spawn")
    workers = [
        spawn.Process(target=_resolve_many, args=(url, embedder.model_id, embedder.dimension, content, 5))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert store.count() == 1
    (memory,) = store.get_many([store.find_by_hash("p", make(embedder, content).content_hash).id])
    assert memory.access_count == 14  # 15 writes: one stored, 14 reinforcements, none lost


def same_prefix_url(store: Any) -> str:
    """A URL to the cluster and index prefix of ``store``, for other processes."""
    target = store._target
    return (
        f"opensearch+{'https' if target.use_ssl else 'http'}://{target.host}:{target.port}/?index={store.names.prefix}"
    )


def test_recall_uses_one_msearch_for_every_leg(store: Any, embedder: HashEmbedder) -> None:
    assert isinstance(store, SearchesLegsTogether)
    store.put(make(embedder, "HTTP clients retry three times with exponential backoff.", title="Retry policy"))
    store.put(make(embedder, "Logs are JSON lines shipped to the collector.", title="Logging format"))
    where = SearchFilter(scopes=["p"])
    legs = store.search_legs([LegQuery("exponential backoff", None), LegQuery("json logs", None)], where, 10)
    assert [c.id for c in legs[0].keyword or []] == [
        c.id for c in store.keyword_search("exponential backoff", where, 10)
    ]
    assert legs[1].vector is None and legs[1].keyword
    calls: list[str] = []
    original = store.client.msearch
    store.client.msearch = lambda **kw: calls.append("msearch") or original(**kw)
    recaller = Recaller(store, embedder, RecallParams(retrieval_mode=RetrievalMode.BM25))
    hits = recaller.recall(["exponential backoff", "retries"], where, limit=5, now=utcnow())
    assert hits[0].memory.title == "Retry policy"
    assert calls == ["msearch"]


def test_native_hybrid_is_off_by_default_and_needs_a_pipeline(store: Any, embedder: HashEmbedder) -> None:
    vector = embedder.embed_queries(["anything"])[0]
    assert store.native_hybrid("anything", vector, SearchFilter(scopes=["p"]), 5, fusion=FusionMethod.MINMAX) is None
    with pytest.raises(ConfigError, match="BM25_WEIGHT"):
        OpenSearchStore(
            "opensearch+http://127.0.0.1:1",
            embedding_model="m",
            dimension=8,
            tuning=OpenSearchTuning(opensearch_hybrid="native"),
            recall=RecallParams(fusion=FusionMethod.RRF, bm25_weight=0.3),
        )


@pytest.mark.needs_knn
def test_native_hybrid_ranks_like_core_fusion(opensearch_backend: OpenSearchBackend, embedder: HashEmbedder) -> None:
    if not opensearch_backend.has_hybrid:
        pytest.skip(opensearch_backend.no_hybrid_reason)
    store = opensearch_backend.open(
        embedder, Settings(), None, tuning=OpenSearchTuning(opensearch_replicas=0, opensearch_hybrid="native")
    )
    try:
        for text in ("Retry policy with exponential backoff", "Logs are JSON lines", "Backoff jitter avoids herds"):
            store.put(make(embedder, text))
        where = SearchFilter(scopes=["p"])
        vector = embedder.embed_queries(["exponential backoff"])[0]
        native = store.native_hybrid("exponential backoff", vector, where, 10, fusion=FusionMethod.MINMAX)
        core = Recaller(store, embedder, RecallParams())._legs(["exponential backoff"], [vector], where)
        from hivemem.fusion import minmax_fuse

        fused = minmax_fuse(core[0], {"bm25": 0.5, "dense": 0.5})
        assert native is not None and [c.id for c in native[:2]] == [f.id for f in fused[:2]]
    finally:
        store.drop()


@pytest.mark.needs_knn
def test_native_hybrid_without_neural_search_is_refused_when_the_store_opens(
    opensearch_backend: OpenSearchBackend, embedder: HashEmbedder
) -> None:
    if not opensearch_backend.has_knn or opensearch_backend.has_hybrid:
        pytest.skip("needs a real node without the neural-search plugin")
    with pytest.raises(ConfigError, match=r"neural-search.*HIVEMEM_OPENSEARCH_HYBRID=core"):
        opensearch_backend.open(
            embedder, Settings(), None, tuning=OpenSearchTuning(opensearch_replicas=0, opensearch_hybrid="native")
        )


def test_setup_command_is_idempotent_and_reports_pipelines(
    opensearch_backend: OpenSearchBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    url = opensearch_backend.url_for()
    args = ["opensearch", "setup", "--url", url, "--model", "hash-16", "--dimension", "16"]
    status = main(args)
    first = capsys.readouterr()
    assert "created" in first.out and "index template" in first.out
    status_again = main(args)
    second = capsys.readouterr()
    assert "exists" in second.out and "updated" in second.out
    # An index made before relations had descriptions gets the field put on it (mappings only grow).
    assert "mapping" in second.out and "fields added" in second.out
    if opensearch_backend.has_hybrid:
        assert (status, status_again) == (0, 0)
        assert "search pipeline" in second.out and "written" in second.out
    else:  # a node without neural-search (osmem lists none): nothing to write, nothing failed
        assert (status, status_again) == (0, 0)
        assert "search pipeline" in second.out and "skipped" in second.out and "hybrid=core" in second.out
    store = open_store(url, embedding_model="hash-16", dimension=16)
    assert store.count() == 0
    store.drop()


def test_setup_export_writes_the_deploy_files(tmp_path: Path) -> None:
    assert main(["opensearch", "setup", "--export", str(tmp_path)]) == 0
    assert (tmp_path / "index-template.json").is_file() and (tmp_path / "search-pipeline-rrf.json").is_file()


def test_every_request_went_through_the_spec_validator(
    store: Any, embedder: HashEmbedder, spec_validator: SpecValidator | None
) -> None:
    if spec_validator is None:
        pytest.skip(NO_SPEC_REASON)
    memory = make(embedder, "Validated on the way out.")
    store.put(memory)
    store.write_resolved(memory, lambda existing: resolve(memory, existing, utcnow()))
    store.keyword_search("validated", SearchFilter(scopes=["p"]), 5)
    store.search_legs([LegQuery("validated", None)], SearchFilter(scopes=["p"]), 5)
    store.record_access([memory.id], utcnow())
    assert store.count() == 1 and store.get_many([memory.id])
    store.delete(memory.id)
    endpoints = {path.rsplit("/", 1)[-1] for _, path in spec_validator.seen}
    assert {"_bulk", "_search", "_msearch", "_mget", "_count", "_delete_by_query"} <= endpoints
    assert any(path.startswith("/_index_template/") for _, path in spec_validator.seen)


def test_a_batch_of_new_memories_is_two_bulk_requests(store: Any, embedder: HashEmbedder) -> None:
    cluster = store._cluster
    sent: list[int] = []
    real_bulk = cluster.bulk

    def counting_bulk(lines: list[Any], refresh: str) -> list[Any]:
        sent.append(len(lines))
        return real_bulk(lines, refresh)

    cluster.bulk = counting_bulk
    memories = [make(embedder, f"Service {i} keeps its settings in etcd.") for i in range(30)]
    resolutions = store.write_resolved_many(memories, lambda m, held: resolve(m, held, utcnow()))
    assert [r.outcome for r in resolutions] == [WriteOutcome.STORED] * 30
    assert sent == [60, 60]  # the claims, then the memories; no request per memory
    assert store.count() == 30
    # A second batch with one stored content and one repeat inside the batch: those two go one by one.
    sent.clear()
    again = [
        make(embedder, "Service 3 keeps its settings in etcd."),
        *(make(embedder, "A new fact.") for _ in range(2)),
    ]
    outcomes = [r.outcome for r in store.write_resolved_many(again, lambda m, held: resolve(m, held, utcnow()))]
    assert outcomes == [WriteOutcome.REINFORCED, WriteOutcome.STORED, WriteOutcome.REINFORCED]
    assert store.count() == 31


def test_driver_errors_come_out_as_typed_store_errors(store: Any) -> None:
    # The store's own client and cluster, so every request is the one the store would send.
    from search.opensearch.errors import AlreadyExists, Conflict, DocumentMissing, IndexMissing, translate_errors

    client, target = store._cluster.client, store._target
    missing_index = f"{store._names.memories}_nothing_here"
    with pytest.raises(IndexMissing, match="index_not_found"), translate_errors(target.display, "reading"):
        client.get(index=missing_index, id="x")
    with pytest.raises(DocumentMissing), translate_errors(target.display, "reading"):
        client.get(index=store._names.claims, id="no-such-claim")
    assert store._cluster.get_doc(store._names.claims, "no-such-claim") is None
    with pytest.raises(IndexMissing):
        store._cluster.get_doc(missing_index, "x")
    client.index(index=store._names.claims, id="c1", body={"memory_id": "m"}, op_type="create", refresh=True)
    with pytest.raises(Conflict), translate_errors(target.display, "claiming"):
        client.index(index=store._names.claims, id="c1", body={"memory_id": "m"}, op_type="create")
    existing = client.indices.get_alias(name=store._names.claims)
    with pytest.raises(AlreadyExists), translate_errors(target.display, "creating"):
        client.indices.create(index=next(iter(existing)))


def test_a_cluster_that_cannot_serve_yet_is_an_outage_not_a_failure(
    store: Any, opensearch_backend: OpenSearchBackend
) -> None:
    # A restarting node answers 503 until its shards are assigned: made here for real with an index
    # whose shard may live on no node. A job meeting it must be retried, so it is the outage class.
    if not opensearch_backend.has_knn:
        pytest.skip(opensearch_backend.no_knn_reason)
    from search.opensearch.errors import translate_errors

    client, target = store._cluster.client, store._target
    unassigned = f"{store._names.memories}_unassigned"
    client.indices.create(
        index=unassigned,
        body={"settings": {"index.routing.allocation.require._name": "no-such-node", "number_of_replicas": 0}},
        params={"wait_for_active_shards": "0"},
    )
    try:
        with pytest.raises(StoreUnavailableError, match="503"), translate_errors(target.display, "reading"):
            client.search(index=unassigned, body={"query": {"match_all": {}}})
    finally:
        client.indices.delete(index=unassigned)


def test_deleting_many_sources_is_three_requests(
    store: Any, embedder: HashEmbedder, spec_validator: SpecValidator | None
) -> None:
    if spec_validator is None:
        pytest.skip(NO_SPEC_REASON)
    from tests.contract.test_knowledge_contract import chunks_of, source

    for n in range(30):
        src = source(f"/gone/{n}.md", chunks=2)
        store.replace_source(src, chunks_of(embedder, src, [f"first part {n}", f"second part {n}"]))
    before = len(spec_validator.seen)
    removed = store.delete_sources("p", [f"/gone/{n}.md" for n in range(30)])
    sent = [path.rsplit("/", 1)[-1] for _, path in spec_validator.seen[before:]]
    assert sent == ["_mget", "_bulk", "_delete_by_query"]  # not three requests a document
    assert len(removed) == 30 and store.sources(["p"]) == []


def test_a_batch_of_documents_is_written_with_one_refresh(
    store: Any, embedder: HashEmbedder, spec_validator: SpecValidator | None
) -> None:
    if spec_validator is None:
        pytest.skip(NO_SPEC_REASON)
    from tests.contract.test_knowledge_contract import chunks_of, source

    documents = []
    for n in range(30):
        src = source(f"/batch/{n}.md", chunks=2)
        documents.append((src, chunks_of(embedder, src, [f"first part {n}", f"second part {n}"])))
    before = len(spec_validator.seen)
    store.replace_sources(documents)
    sent = [path.rsplit("/", 1)[-1] for _, path in spec_validator.seen[before:]]
    # chunks, sources, the old versions' chunks, one refresh of both indices: not three a document
    assert sent == ["_bulk", "_bulk", "_delete_by_query", "_refresh"]
    assert len(store.sources(["p"])) == 30
    assert len(store.chunk_keyword_search("part", ChunkFilter(scopes=["p"]), 100)) == 60  # searched at once


def test_one_process_at_a_time_holds_the_sleep_lease(store: Any, embedder: HashEmbedder) -> None:
    # Two processes serving one cluster from two machines: no data folder is shared between them.
    other = open_store(same_prefix_url(store), embedding_model=embedder.model_id, dimension=embedder.dimension)
    try:
        with store.sleep_lease(wait=False) as held:
            assert held
            with other.sleep_lease(wait=False) as also:
                assert not also  # the pass is left to the holder
        with other.sleep_lease(wait=False) as after:
            assert after  # released when the pass ended
        done: list[object] = []

        def waiting_pass() -> None:
            with other.sleep_lease(wait=True) as held:
                done.append(("waiter", held))

        with store.sleep_lease(wait=False) as held:
            waiter = threading.Thread(target=waiting_pass)
            waiter.start()
            done.append("holder ends")
        waiter.join(timeout=30)
        assert done == ["holder ends", ("waiter", True)]  # it waited for the holder, then ran
    finally:
        other.close()


def test_a_sleep_lease_left_by_a_dead_process_is_taken_over_after_an_hour(store: Any) -> None:
    def left_behind(age: timedelta) -> None:
        body = {"memory_id": "dead", "scope": "", "content_hash": "", "claimed_at": to_iso(datetime.now(UTC) - age)}
        store.client.index(index=store.names.claims, id=sleep_lease_id(), body=body, refresh=True)

    left_behind(timedelta(minutes=5))  # a pass running for five minutes: still its holder's
    with store.sleep_lease(wait=False) as held:
        assert not held
    left_behind(timedelta(minutes=61))  # older than any pass: its holder died
    with store.sleep_lease(wait=False) as held:
        assert held
    with store.sleep_lease(wait=False) as held:
        assert held  # and released again at the end


def test_a_service_on_opensearch_without_a_broker_sleeps_under_the_clusters_lease(
    store: Any, embedder: HashEmbedder, tmp_path: Path
) -> None:
    from api.services.memories import MemoryService
    from api.services.parts import Parts

    other = open_store(same_prefix_url(store), embedding_model=embedder.model_id, dimension=embedder.dimension)
    # Each machine has a data folder of its own: a lock file there would let both sleep.
    here = MemoryService(Parts(Settings(data_dir=tmp_path / "here", embed_model="hash:64"), store, embedder))
    there = MemoryService(Parts(Settings(data_dir=tmp_path / "there", embed_model="hash:64"), other, embedder))
    try:
        with here.lifecycle.sleep_lock(wait=False) as held, there.lifecycle.sleep_lock(wait=False) as also:
            assert held and not also
    finally:
        there.close()
        here.runner.close()


def test_an_index_hivemem_did_not_make_is_refused_and_left_as_it_was(opensearch_backend: OpenSearchBackend) -> None:
    prefix = f"test_{uuid.uuid4().hex[:16]}"
    url = opensearch_backend.url_for(prefix)
    client = OpenSearch([opensearch_backend.url.removeprefix("opensearch+")])
    foreign = {"mappings": {"properties": {"embedding": {"type": "float"}, "title": {"type": "keyword"}}}}
    try:
        # Behind the alias, as hivemem's own would be: its mapping is read, and refused.
        client.indices.create(index=f"{prefix}-v2", body={**foreign, "aliases": {prefix: {}}})
        with pytest.raises(ConfigError, match=r"not made by hivemem \(no _meta\.hivemem; 'embedding' is float"):
            open_store(url, embedding_model="hash-16", dimension=16)
        assert client.indices.get_mapping(index=f"{prefix}-v2")[f"{prefix}-v2"]["mappings"] == foreign["mappings"]
        client.indices.delete(index=f"{prefix}-v2")
        # Under the alias's own name: hivemem cannot put its alias there, and says why.
        client.indices.create(index=prefix, body=foreign)
        with pytest.raises(StoreError, match="an index exists with the same name as the alias"):
            open_store(url, embedding_model="hash-16", dimension=16)
    finally:
        client.indices.delete(index=f"{prefix}*", ignore_unavailable=True)
        client.close()
