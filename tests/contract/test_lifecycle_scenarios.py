"""The lifecycle stories of issue 10, on every store backend: what a team sees happen to its memory.

Each story goes through the same job functions the runners call (``workers.jobs``,
``workers.lifecycle``) and reads the outcome back through recall and the Store contract. Recall
runs its BM25 leg here (osmem-server has no k-NN); resolution by meaning on write needs each store's
vector index and has its own tests (tests/contract/test_planned_writes_contract.py,
tests/workers/test_resolution_model.py): these stories need only what osmem-server has.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.services.undo import undo
from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.model import Link, Memory, MemoryState, MemoryType, Relation, RelationType, new_memory_id, utcnow
from search import SearchFilter, Store
from search.recall import Recaller, RecallParams, RetrievalMode
from workers import jobs
from workers.lifecycle import archive_faded, consolidate_goal, last_sleep, sleep_consolidate, sleep_policy

START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
EVERY_STATE = (MemoryState.WORKING, MemoryState.CONSOLIDATED, MemoryState.ARCHIVED)


def note(content: str, *, scope: str = "team/api", at: datetime = START, **kw: object) -> Memory:
    return Memory(
        id=new_memory_id(),
        scope=scope,
        title=str(kw.pop("title", content[:48])),
        content=content,
        content_hash=content_hash(content),
        created_at=at,
        updated_at=at,
        **kw,  # type: ignore[arg-type]
    )


def memorize(store: Store, embedder: HashEmbedder, memory: Memory) -> str:
    return jobs.memorize(store, embedder, memory, memory.created_at).memory.id


def recall(store: Store, embedder: HashEmbedder, query: str, now: datetime, scope: str = "team/api") -> list[Memory]:
    recaller = Recaller(store, embedder, RecallParams(retrieval_mode=RetrievalMode.BM25))
    return [h.memory for h in recaller.recall([query], SearchFilter(scopes=[scope]), limit=10, now=now)]


def everything(store: Store, scope: str = "team/api") -> list[Memory]:
    return store.list_memories(SearchFilter(scopes=[scope], states=EVERY_STATE), 1000)


# A scope holds more than a story's memories; recall's scores are relative to what else matches.
BACKGROUND = [
    "The web client caches the session token for one hour.",
    "Search requests time out after five seconds on the web client.",
    "The API gateway logs every request with its token id.",
    "Staging credentials live in the team vault, not in the repository.",
    "The build uses a pinned toolchain so that releases are reproducible.",
    "Index rebuilds run at night when search traffic is low.",
]


def with_background(store: Store, embedder: HashEmbedder) -> list[str]:
    return [memorize(store, embedder, note(text, at=START - timedelta(days=30))) for text in BACKGROUND]


RATE_LIMIT_NOTES = [
    "The public API rate limit is 100 requests per minute per token; clients get 429 beyond it.",
    "The public API rate limit is 100 requests per minute per token, clients get a 429 beyond it.",
    "Public API rate limit: 100 requests per minute per token; beyond it clients get 429.",
    "The public API rate limit is 100 requests a minute per token; clients get 429 beyond that.",
    "The public API rate limit is 100 requests per minute for each token; clients get 429 beyond it.",
]


def test_five_near_duplicate_notes_end_as_one_insight_after_sleep(store: Store, embedder: HashEmbedder) -> None:
    background = with_background(store, embedder)
    ids = [
        memorize(store, embedder, note(text, at=START + timedelta(hours=i))) for i, text in enumerate(RATE_LIMIT_NOTES)
    ]
    unrelated = memorize(store, embedder, note("Deploys go out on Tuesdays after the change review."))
    now = START + timedelta(days=1)

    dry = sleep_consolidate(store, embedder, "team/api", now, sleep_policy(), dry_run=True)
    assert [sorted(m.id for m in c.sources) for c in dry.consolidations] == [sorted(ids)]
    assert len(everything(store)) == 12 and last_sleep(store, "team/api") is None  # a dry run writes nothing

    report = sleep_consolidate(store, embedder, "team/api", now, sleep_policy(), new_id=lambda: "insight-1")
    assert len(report.consolidations) == 1
    insight = store.get("insight-1")
    assert insight.memory_type is MemoryType.INSIGHT and insight.state is MemoryState.WORKING
    assert "100 requests per minute per token" in insight.content
    sources = store.get_many(ids)
    assert {m.state for m in sources} == {MemoryState.CONSOLIDATED}
    assert all(m.importance == 0.1 for m in sources)  # 0.5 x 0.2
    assert {r.target_id for r in store.relations("insight-1") if r.type is RelationType.DERIVED_FROM} == set(ids)
    assert {m.state for m in store.get_many([unrelated, *background])} == {MemoryState.WORKING}
    assert last_sleep(store, "team/api") == now

    top = recall(store, embedder, "API rate limit per token", now)
    assert top[0].id == "insight-1"
    # Once a scope has slept, the same memories are not consolidated again.
    again = sleep_consolidate(store, embedder, "team/api", now + timedelta(hours=1), sleep_policy())
    assert again.consolidations == ()
    assert len(everything(store)) == 13  # five muted sources, one insight, the rest: nothing deleted


def test_dropped_typescript_for_go_leaves_go_on_top_and_typescript_reachable(
    store: Store, embedder: HashEmbedder
) -> None:
    with_background(store, embedder)
    old = memorize(
        store, embedder, note("The team prefers TypeScript for the web client.", memory_type=MemoryType.PREFERENCE)
    )
    later = START + timedelta(days=3)
    new = note(
        "The team decided to drop TypeScript for Go in the web client build tooling.",
        at=later,
        memory_type=MemoryType.PREFERENCE,
        requested_links=(Link(old, RelationType.SUPERSEDES),),
    )
    new_id = memorize(store, embedder, new)

    assert store.get(old).valid_to == later
    assert [m.id for m in recall(store, embedder, "the team and TypeScript in the web client", later)][:1] == [new_id]
    edges = store.relations(new_id)
    assert [(e.target_id, e.type) for e in edges] == [(old, RelationType.SUPERSEDES)]
    record = next(e for e in store.audit_log(new_id) if e.action == "supersede")
    assert record.detail["superseded"] == old
    undo(store, embedder, record, "alice")
    assert store.get(old).valid_to is None


def test_the_links_of_a_memory_are_added_once_each_and_one_to_a_forgotten_memory_is_skipped(
    store: Store, embedder: HashEmbedder
) -> None:
    runbook = memorize(store, embedder, note("The deploy runbook lives in the ops wiki."))
    old = memorize(store, embedder, note("Deploys go out on Thursdays after the sync."))
    gone = memorize(store, embedder, note("A memory forgotten after the gateway checked it."))
    store.delete(gone)
    later = START + timedelta(days=1)
    links = (
        Link(runbook, RelationType.RELATED_TO, 0.5),
        Link(old, RelationType.SUPERSEDES),
        Link(gone, RelationType.DEPENDS_ON),
        Link(old, RelationType.SUPERSEDES, 0.7),  # the same edge again: the first is kept, once
    )
    new_id = memorize(store, embedder, note("Deploys go out on Tuesdays now.", at=later, requested_links=links))

    edges = sorted((e.target_id, e.type.value, e.strength) for e in store.relations(new_id))
    assert edges == sorted([(runbook, "related_to", 0.5), (old, "supersedes", 1.0)])
    assert store.get(old).valid_to == later
    assert [e.detail["superseded"] for e in store.audit_log(new_id) if e.action == "supersede"] == [old]  # once


def test_a_goal_closed_by_a_lesson_becomes_one_parent_with_three_muted_sources(
    store: Store, embedder: HashEmbedder
) -> None:
    with_background(store, embedder)
    goal = memorize(
        store, embedder, note("Goal: cut the p95 latency of search below 200 ms.", memory_type=MemoryType.GOAL)
    )
    findings = [
        memorize(
            store,
            embedder,
            note(text, importance=importance, requested_links=(Link(goal, RelationType.ACHIEVES),)),
        )
        for text, importance in [
            ("The search p95 was dominated by cold cache reads of the index.", 0.6),
            ("Warming the index at start-up took p95 from 480 ms to 260 ms.", 0.8),
            ("Batching the vector queries took p95 from 260 ms to 170 ms.", 0.7),
        ]
    ]
    closed_at = START + timedelta(days=10)
    lesson = memorize(
        store,
        embedder,
        note(
            "Lesson: search latency is won by warming the index and batching vector queries.",
            at=closed_at,
            memory_type=MemoryType.INSIGHT,
            requested_links=(Link(goal, RelationType.CLOSES),),
        ),
    )

    parent = store.get(lesson)
    assert parent.importance == 0.88  # min(1, max(0.6, 0.8, 0.7) x 1.1)
    sources = store.get_many(findings)
    assert {m.state for m in sources} == {MemoryState.CONSOLIDATED}
    assert [m.importance for m in sources] == [0.12, 0.16, 0.14]
    assert {r.target_id for r in store.relations(lesson) if r.type is RelationType.DERIVED_FROM} == set(findings)
    assert store.get(goal).state is MemoryState.WORKING
    assert consolidate_goal(store, goal, closed_at, author="alice") is None  # nothing left to gather
    assert recall(store, embedder, "search latency index warming batching", closed_at)[0].id == lesson

    record = next(e for e in store.audit_log(lesson) if e.action == "consolidate")
    undo(store, embedder, record, "alice")
    assert {m.state for m in store.get_many(findings)} == {MemoryState.WORKING}
    assert [m.importance for m in store.get_many(findings)] == [0.6, 0.8, 0.7]
    assert not [r for r in store.relations(lesson) if r.type is RelationType.DERIVED_FROM]


def test_a_memory_nobody_recalls_sinks_below_one_recalled_daily(store: Store, embedder: HashEmbedder) -> None:
    with_background(store, embedder)
    ignored = memorize(store, embedder, note("Staging database credentials rotate every month.", title="staging db"))
    used = memorize(store, embedder, note("Staging database credentials rotate every month!", title="staging db"))
    day0 = recall(store, embedder, "staging database credentials", START)
    assert {m.id for m in day0[:2]} == {ignored, used}
    for day in range(1, 91):
        store.record_access([used], START + timedelta(days=day))
    ranked = [m.id for m in recall(store, embedder, "staging database credentials", START + timedelta(days=90))]
    assert ranked.index(used) < ranked.index(ignored)
    assert store.get(used).access_count == 90 and store.get(ignored).access_count == 0


def test_nothing_is_deleted_except_by_forget(store: Store, embedder: HashEmbedder) -> None:
    ids = [
        memorize(store, embedder, note(text, at=START + timedelta(hours=i))) for i, text in enumerate(RATE_LIMIT_NOTES)
    ]
    sleep_consolidate(store, embedder, "team/api", START + timedelta(days=1), sleep_policy())
    assert store.count(["team/api"]) == 6
    assert len(store.get_many(ids)) == 5
    store.delete(ids[0])
    assert store.count(["team/api"]) == 5


def test_a_faded_memory_is_archived_unless_tied_to_a_strong_one_and_found_on_request(
    store: Store, embedder: HashEmbedder
) -> None:
    with_background(store, embedder)
    faded = memorize(store, embedder, note("The old build server was called hamster.", importance=0.2))
    tied = memorize(store, embedder, note("The old build agent ran on hamster too.", importance=0.2))
    keeper = memorize(store, embedder, note("Builds run on the shared CI runners.", importance=0.9))
    store.add_relation(Relation(tied, keeper, RelationType.RELATED_TO))
    # Two faded memories tied to each other keep each other from nothing.
    pair = [
        memorize(store, embedder, note(f"The {name} lint rule was dropped.", importance=0.2))
        for name in ("tab", "semi")
    ]
    store.add_relation(Relation(pair[0], pair[1], RelationType.RELATED_TO))
    year_later = START + timedelta(days=365)
    store.record_access([keeper], year_later - timedelta(days=1))  # the keeper is in use

    foreseen = [m.id for m in archive_faded(store, "team/api", year_later, dry_run=True)]
    assert store.get(faded).state is MemoryState.WORKING  # a dry run moves nothing
    archived = [m.id for m in archive_faded(store, "team/api", year_later)]
    assert archived == foreseen
    assert faded in archived and tied not in archived and keeper not in archived
    assert set(pair) <= set(archived)
    assert store.get(faded).state is MemoryState.ARCHIVED
    assert store.get(faded).embedding is not None  # archived whole: its vector kept for recall on request
    assert faded not in [m.id for m in recall(store, embedder, "old build server hamster", year_later)]
    recaller = Recaller(store, embedder, RecallParams(retrieval_mode=RetrievalMode.BM25))
    on_request = recaller.recall(
        ["old build server hamster"], SearchFilter(scopes=["team/api"], states=EVERY_STATE), limit=10, now=year_later
    )
    assert faded in [h.memory.id for h in on_request]
    assert archive_faded(store, "team/api", year_later) == []  # already archived: nothing new

    record = next(e for e in store.audit_log(faded) if e.action == "archive")
    before_undo = utcnow()
    undo(store, embedder, record, "alice")
    back = store.get(faded)
    assert back.state is MemoryState.WORKING
    # Counted as used when it was taken back, so it fades again from there.
    assert back.last_accessed_at is not None and back.last_accessed_at >= before_undo
    assert faded not in [m.id for m in archive_faded(store, "team/api", before_undo + timedelta(days=1))]
    assert len(everything(store)) == 11  # archived or not, nothing was deleted
