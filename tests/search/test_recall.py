"""The read path over a real SQLite store: fusion, multi-query, rescoring, filters, no writes."""

from __future__ import annotations

import importlib
import random
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.model import (
    DuplicatePolicy,
    FusionMethod,
    LinkType,
    MemoryType,
    Relation,
    RelationType,
    RetrievalMode,
    Source,
    utcnow,
)
from hivemem.schemas import LinkCreate, MemoryCreate, RecallRequest
from search.recall_params import RecallParams
from tests.search.conftest import with_mode

SCOPE = "github.com/acme/api"
CALLER = Caller(default_scope=SCOPE)


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    svc = MemoryService.from_settings(settings)
    yield svc
    svc.close()


def remember(service: MemoryService, query: str | list[str], **kw: object) -> list[str]:
    response = service.remember(RecallRequest(query=query, **kw), CALLER)  # type: ignore[arg-type]
    return [r.title for r in response.results]


def add(service: MemoryService, title: str, content: str, **kw: object) -> str:
    return service.memorize(MemoryCreate(title=title, content=content, **kw), CALLER).id  # type: ignore[arg-type]


def test_hybrid_finds_by_keyword_and_modes_switch_legs(service: MemoryService) -> None:
    add(service, "Retry policy", "HTTP clients retry three times with exponential backoff.")
    add(service, "Logging format", "Logs are JSON lines shipped to the collector.")
    assert remember(service, "exponential backoff retries")[0] == "Retry policy"
    for mode in RetrievalMode:
        with_mode(service, mode)
        assert remember(service, "exponential backoff retries")[0] == "Retry policy", mode


def test_rrf_fusion_ranks_the_same_obvious_winner(settings: Settings) -> None:
    svc = MemoryService.from_settings(settings, recall=RecallParams(fusion=FusionMethod.RRF))
    try:
        add(svc, "Retry policy", "HTTP clients retry three times with exponential backoff.")
        add(svc, "Logging format", "Logs are JSON lines shipped to the collector.")
        response = svc.remember(RecallRequest(query="exponential backoff"), CALLER)
        assert response.results[0].title == "Retry policy"
        assert 0.0 < response.results[0].score <= 1.0
    finally:
        svc.close()


def test_multiple_queries_are_fused(service: MemoryService) -> None:
    add(service, "Database choice", "Postgres is the primary database for billing.")
    add(service, "Queue choice", "RabbitMQ carries the billing events.")
    add(service, "Unrelated", "The office plants are watered on Mondays.")
    titles = remember(service, ["postgres billing database", "rabbitmq events"], limit=2)
    assert set(titles) == {"Database choice", "Queue choice"}


def test_confirmed_outranks_inferred_at_equal_relevance(service: MemoryService) -> None:
    # Same text in the project and in global: identical scores in both legs, so trust decides.
    inferred = add(service, "Indentation", "The team indents python with four spaces.", source=Source.AGENT_INFERRED)
    confirmed = add(
        service,
        "Indentation",
        "The team indents python with four spaces.",
        source=Source.USER_CONFIRMED,
        scope="",
    )
    response = service.remember(RecallRequest(query="python indentation four spaces"), CALLER)
    assert [r.id for r in response.results] == [confirmed, inferred]
    assert response.results[1].score == pytest.approx(response.results[0].score * 0.9)


def test_decay_ranks_stale_memories_lower(service: MemoryService) -> None:
    # Imported, so that write-time resolution keeps the two near-duplicates apart (exact content only).
    fresh = add(service, "Cache TTL fresh", "Cache entries expire after ten minutes.", source=Source.IMPORTED)
    stale = add(service, "Cache TTL stale", "Cache entries expire after ten minutes!", source=Source.IMPORTED)
    two_years_ago = utcnow() - timedelta(days=720)
    service.store.put(replace(service.store.get(stale), created_at=two_years_ago), DuplicatePolicy.OVERWRITE)
    response = service.remember(RecallRequest(query="cache entries expire", explain=True), CALLER)
    ids = [r.id for r in response.results]
    assert ids.index(fresh) < ids.index(stale)
    explained = {r.id: r.explain for r in response.results}
    assert explained[stale] is not None and explained[fresh] is not None
    assert explained[stale]["strength"] < explained[fresh]["strength"]  # type: ignore[operator]


def test_min_relevance_and_limit(service: MemoryService) -> None:
    for i in range(8):
        add(service, f"Note number {i}", f"Build step {i} compiles the protobuf schemas.")
    assert len(remember(service, "protobuf schemas", limit=3)) == 3
    assert remember(service, "protobuf schemas", min_relevance=1.0) == []


def test_filters_reach_the_store(service: MemoryService) -> None:
    add(
        service,
        "Outage postmortem",
        "The outage came from an expired TLS certificate.",
        memory_type=MemoryType.FAILURE,
        details={"error": "certificate expired", "component": "edge proxy", "severity": "high"},
    )
    add(
        service,
        "TLS decision",
        "Certificates renew automatically via ACME.",
        memory_type=MemoryType.DECISION,
        tags=["tls"],
    )
    assert remember(service, "TLS certificate", memory_types=[MemoryType.FAILURE]) == ["Outage postmortem"]
    assert remember(service, "TLS certificate", tags=["tls"]) == ["TLS decision"]
    future = (utcnow() + timedelta(days=1)).isoformat()
    assert remember(service, "TLS certificate", created_after=future) == []


def test_recall_reads_scope_and_global_only(service: MemoryService) -> None:
    add(service, "Project memory", "Widgets are rendered server side.")
    add(service, "Global memory", "Widgets should always have alt text.", scope="")
    add(service, "Other project", "Widgets are rendered client side.", scope="github.com/acme/web")
    assert set(remember(service, "widgets rendered")) == {"Project memory", "Global memory"}


def test_being_listed_is_not_being_used_reading_and_citing_are(service: MemoryService) -> None:
    memory_id = add(service, "Port number", "The API listens on port 8443.")
    service.remember(RecallRequest(query="api port"), CALLER)
    service.runner.drain()
    assert service.store.get(memory_id).access_count == 0  # a recall writes nothing
    service.get(memory_id, CALLER)  # read by id: used
    service.runner.drain()
    assert service.store.get(memory_id).access_count == 1
    edge = LinkCreate(target_id=memory_id, relationship_type=LinkType.DEPENDS_ON)
    service.memorize(
        MemoryCreate(title="Firewall rule", content="Open 8443 on the edge firewall.", related_to=[edge]), CALLER
    )
    service.runner.drain()
    assert service.store.get(memory_id).access_count == 2  # cited by a new memory: used
    cited_in_bulk = MemoryCreate(title="Load balancer", content="The load balancer forwards 8443.", related_to=[edge])
    service.memorize_many([cited_in_bulk], CALLER)
    service.runner.drain()
    assert service.store.get(memory_id).access_count == 3  # in a bulk, the same
    replaced = LinkCreate(target_id=memory_id, relationship_type=LinkType.SUPERSEDES)
    service.memorize(
        MemoryCreate(title="Port number", content="The API listens on 9443.", related_to=[replaced]), CALLER
    )
    service.runner.drain()
    assert service.store.get(memory_id).access_count == 3  # replaced, not used


def stdlib_summaries() -> dict[str, str]:
    """Real text written by others: the opening paragraph of standard library modules' docstrings."""
    summaries: dict[str, str] = {}
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in ("antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"):
            continue
        try:
            module = importlib.import_module(name)
        except Exception:  # a module this platform lacks
            continue
        first = " ".join((module.__doc__ or "").strip().split("\n\n")[0].split())
        if len(first) >= 40:
            summaries[name] = first[:400]
        if len(summaries) == 80:
            break
    return summaries


def test_the_same_question_ranks_the_same_whatever_was_asked_before(service: MemoryService) -> None:
    summaries = stdlib_summaries()
    for name, text in summaries.items():
        add(service, f"The {name} module", text)
    words = {name: [w for w in text.split() if len(w) > 4] for name, text in summaries.items()}
    questions = [" ".join(ws[1:5]) for ws in words.values() if len(ws) >= 5][:50]
    assert len(questions) == 50

    def ranked(order: list[str]) -> dict[str, list[str]]:
        answers = {q: [r.id for r in service.remember(RecallRequest(query=q), CALLER).results] for q in order}
        service.runner.drain()
        return answers

    first = ranked(questions)
    again = ranked(list(reversed(questions)))
    shuffled = questions[:]
    random.Random(7).shuffle(shuffled)
    assert first == again == ranked(shuffled)


def test_explain_decomposes_each_score_and_the_graph_part(service: MemoryService) -> None:
    hit = add(service, "Cache eviction", "Cache entries are evicted least recently used first.")
    linked = add(service, "Eviction incident", "The March outage came from a full disk, not the LRU.")
    service.store.add_relation(Relation(hit, linked, RelationType.RELATED_TO, 0.5))
    response = service.remember(
        RecallRequest(query="cache entries evicted least recently used", explain=True, limit=1), CALLER
    )
    top = response.results[0]
    assert top.id == hit and top.explain is not None
    parts = top.explain
    assert {"relevance", "bm25_rank", "bm25_score", "knn_rank", "knn_score", "strength", "trust"} <= set(parts)
    assert parts["bm25_rank"] == 1 and parts["bm25_score"] is not None and parts["bm25_score"] > 0
    assert parts["knn_score"] is not None and -1 <= parts["knn_score"] <= 1
    assert (parts["superseded"], parts["consolidated"]) == (1.0, 1.0)
    (related,) = [r for r in response.related if r.id == linked]
    assert related.explain == {"graph_hops": 1, "from_score": round(top.score, 6), "graph": related.score}
    assert related.score == pytest.approx(top.score * 0.5, abs=1e-6)
    quiet = service.remember(RecallRequest(query="cache entries evicted least recently used", limit=1), CALLER)
    assert quiet.results[0].explain is None and all(r.explain is None for r in quiet.related)


def test_a_date_the_question_names_lifts_what_is_dated_then(settings: Settings) -> None:
    question = "What did the team ship in March 2024?"
    boosted = MemoryService.from_settings(settings, recall=RecallParams(time_boost=1.0))
    try:
        add(boosted, "February release", "[12 February, 2024] The team shipped the billing export.")
        march = add(boosted, "March release", "[14 March, 2024] The team shipped the audit log.")
        found = boosted.remember(RecallRequest(query=question, explain=True), CALLER).results
        by_id = {r.id: r for r in found}
        assert found[0].id == march
        assert by_id[march].explain is not None and by_id[march].explain["time"] == 2.0
        assert all((r.explain or {})["time"] == 1.0 for r in found if r.id != march)
        undated = boosted.remember(RecallRequest(query="What did the team ship?", explain=True), CALLER).results
        assert all((r.explain or {})["time"] is None for r in undated)
    finally:
        boosted.close()
    # Turned off: no time factor at all.
    plain = MemoryService.from_settings(settings, recall=RecallParams(time_boost=0.0))
    try:
        found = plain.remember(RecallRequest(query=question, explain=True), CALLER).results
        assert all((r.explain or {})["time"] is None for r in found)
    finally:
        plain.close()


def test_query_expansion_moves_the_vector_leg_toward_the_best_hits(settings: Settings) -> None:
    def knn_scores(service: MemoryService) -> dict[str, float]:
        with_mode(service, RetrievalMode.DENSE)
        found = service.remember(RecallRequest(query="cache policy", explain=True), CALLER).results
        return {r.id: float((r.explain or {})["knn_score"] or 0.0) for r in found}

    plain = MemoryService.from_settings(settings)
    try:
        best = add(plain, "Cache eviction", "cache eviction policy least recently used")
        near = add(plain, "Eviction metrics", "eviction metrics dashboard panels")
        add(plain, "Billing", "invoices monthly accounting ledger")
        before = knn_scores(plain)
    finally:
        plain.close()
    # The same store, read with the expansion on.
    expanded = MemoryService.from_settings(
        settings, recall=RecallParams(query_expansion="prf", prf_docs=1, prf_weight=1.0)
    )
    try:
        after = knn_scores(expanded)
    finally:
        expanded.close()
    # The best hit shares "eviction" with its neighbour: the expanded query finds that neighbour closer.
    assert after[near] > before[near]
    assert max(after, key=after.__getitem__) == best


def _ranked(service: MemoryService, query: str) -> list[tuple[str, float]]:
    found = service.remember(RecallRequest(query=query, explain=True), CALLER).results
    return [(r.id, r.score) for r in found]


def test_the_context_leg_finds_the_reply_to_the_turn_that_matches(settings: Settings) -> None:
    turns = [
        "I went to see the doctor about my knee this morning.",
        "Rest for two weeks, no running, then physiotherapy twice a week.",
        "Anyway, how was your weekend trip to the lake?",
    ]
    query = "What did the doctor recommend for the knee?"
    svc = MemoryService.from_settings(settings)
    try:
        requests = [MemoryCreate(title=t[:40], content=t, thread="visit") for t in turns]
        ids = [r.id for r in svc.memorize_many(requests, CALLER)]
        add(svc, "Plumbing", "The plumber fixed the kitchen sink on Tuesday.")
        # The keyword legs alone, so the hash embedder's noise cannot decide the order.
        with_mode(svc, RetrievalMode.BM25)
        found = svc.remember(RecallRequest(query=query, explain=True), CALLER).results
        # The reply shares none of the question's words: found through its thread, right after the visit.
        assert [r.id for r in found] == ids  # the lake is two steps away: found too, last
        visit, reply = found[0].explain, found[1].explain
        assert visit is not None and reply is not None and reply["bm25_rank"] is None
        # All of its context score is the visit's: an adjacent turn's BM25 score, at weight 1.
        assert reply["context_score"] == visit["bm25_score"]
        assert svc.store.get(ids[1]).thread == "visit"
    finally:
        svc.close()
    without = MemoryService.from_settings(settings, recall=RecallParams(context_window=0))
    try:
        with_mode(without, RetrievalMode.BM25)
        assert [i for i, _ in _ranked(without, query)] == [ids[0]]
    finally:
        without.close()


def test_memories_in_no_thread_are_recalled_as_without_the_context_leg(settings: Settings) -> None:
    svc = MemoryService.from_settings(settings)
    try:
        add(svc, "Retry policy", "HTTP clients retry three times with exponential backoff.")
        add(svc, "Retry budget", "Retries stop once a request has spent its budget of ten seconds.")
        on = _ranked(svc, "retry backoff budget")
    finally:
        svc.close()
    off = MemoryService.from_settings(settings, recall=RecallParams(context_window=0))
    try:
        assert _ranked(off, "retry backoff budget") == on
    finally:
        off.close()


def _scores(service: MemoryService, query: str) -> dict[str, tuple[float, float | int | str | None]]:
    """id -> (score, explain's thread_best), the keyword legs alone (the hash embedder adds noise)."""
    with_mode(service, RetrievalMode.BM25)
    found = service.remember(RecallRequest(query=query, explain=True), CALLER).results
    return {r.id: (r.score, (r.explain or {})["thread_best"]) for r in found}


def test_the_thread_lift_moves_a_turn_toward_the_best_of_its_conversation(settings: Settings) -> None:
    query = "weekend lake trip fishing"
    plain = MemoryService.from_settings(settings, recall=RecallParams(thread_weight=0.0))
    try:
        turns = [
            MemoryCreate(title="Lake trip", content="We drove to the lake for the weekend trip."),
            MemoryCreate(title="Weather", content="It rained, but the fishing was great."),
        ]
        best, reply = [
            r.id for r in plain.memorize_many([t.model_copy(update={"thread": "chat"}) for t in turns], CALLER)
        ]
        alone = add(plain, "Licence", "The fishing licence is renewed every spring.")
        before = _scores(plain, query)
    finally:
        plain.close()
    lifted = MemoryService.from_settings(settings, recall=RecallParams(thread_weight=0.4))
    try:
        after = _scores(lifted, query)
    finally:
        lifted.close()
    assert before[best][0] > before[reply][0] > 0
    # The reply moves toward its thread's best: (own + 0.4 × best) / 1.4.
    assert after[reply][0] == pytest.approx((before[reply][0] + 0.4 * before[best][0]) / 1.4, abs=1e-5)
    assert after[reply][1] == pytest.approx(before[best][0], abs=1e-5)
    # The best of the thread keeps its score (the first result never changes), and a memory in no
    # thread is not touched.
    assert after[best] == (before[best][0], before[best][0])
    assert after[alone] == before[alone] and after[alone][1] is None
    assert before[reply][1] is None  # off: no thread_best at all


def test_the_thread_lift_does_not_undo_superseding(settings: Settings) -> None:
    svc = MemoryService.from_settings(settings, recall=RecallParams(thread_weight=1.0))
    try:
        turns = [
            MemoryCreate(title="Deploy day", content="We deploy the billing service on Fridays.", thread="ops"),
            MemoryCreate(title="Deploy window", content="Billing deploys happen after 18:00.", thread="ops"),
        ]
        best, old = [r.id for r in svc.memorize_many(turns, CALLER)]
        query = "when do we deploy billing"
        before = _scores(svc, query)
        stale = replace(svc.store.get(old), valid_to=utcnow() - timedelta(days=1))
        svc.store.put(stale, DuplicatePolicy.OVERWRITE)
        after = _scores(svc, query)
    finally:
        svc.close()
    # Lifted first, then scaled by the superseded factor: still ranked ×0.1, whatever its thread scores.
    assert after[old][0] == pytest.approx(before[old][0] * 0.1, abs=1e-5)
    assert after[best] == before[best]


def test_recalls_and_knowledge_searches_wait_their_turn_at_one_gate(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIVEMEM_SEARCH_CONCURRENCY", "1")
    svc = MemoryService.from_settings(settings)
    try:
        add(svc, "Retry policy", "HTTP clients retry three times with exponential backoff.")
        gate = svc.search_gate
        assert gate is not None and gate.slots == 1
        assert svc.knowledge.searcher.gate is svc.recaller.gate is gate
        found: list[list[str]] = []
        with gate.held():  # the one slot is taken: a recall must queue for it
            asking = threading.Thread(target=lambda: found.append(remember(svc, "exponential backoff")))
            asking.start()
            pause = threading.Event()
            for _ in range(10_000):
                if gate.waiting == 1:
                    break
                pause.wait(0.001)
            assert gate.waiting == 1 and not found
        asking.join(10)
        assert found == [["Retry policy"]]
    finally:
        svc.close()
