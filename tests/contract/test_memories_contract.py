"""One test per clause of the memories aggregate of the Store contract (search/base.py), on every backend.

Tests of the vector leg carry ``needs_knn``: they run on SQLite and on a real OpenSearch cluster,
and skip on osmem-server, which has no k-NN query.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.errors import DuplicateMemoryError, EmbeddingMismatchError, MemoryNotFoundError
from hivemem.hashing import content_hash
from hivemem.model import (
    DuplicatePolicy,
    Memory,
    MemoryState,
    MemoryType,
    Relation,
    RelationType,
    Source,
    WriteOutcome,
    new_memory_id,
)
from hivemem.resolution import Resolution
from search import SearchFilter, Store
from search.base import PageMark

# The contract's cosines: a store may score from a compressed copy of the vectors (float16).
COSINE_TOLERANCE = 2e-3


def make(embedder: HashEmbedder, content: str, *, scope: str = "p", **kw: object) -> Memory:
    title = str(kw.pop("title", content[:40]))
    memory = Memory(
        id=str(kw.pop("id", new_memory_id())),
        scope=scope,
        title=title,
        content=content,
        content_hash=content_hash(content),
        **kw,  # type: ignore[arg-type]
    )
    memory.embedding = embedder.embed_passages([memory.embedding_text()])[0]
    memory.embedding_model = embedder.model_id
    return memory


def test_put_get_round_trips_every_field(store: Store, embedder: HashEmbedder) -> None:
    created = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    memory = make(
        embedder,
        "We chose SQLite WAL mode for the embedded store.",
        title="SQLite WAL decision",
        memory_type=MemoryType.DECISION,
        importance=0.8,
        source=Source.USER_CONFIRMED,
        tags=["db", "sqlite"],
        related_files=["search/sqlite.py"],
        author="alice",
        created_at=created,
        updated_at=created,
        valid_from=created,
        details={"why": "one writer", "n": 3},
    )
    assert store.put(memory) is True
    got = store.get(memory.id)
    assert got.embedding is not None and memory.embedding is not None
    assert got.embedding == pytest.approx(memory.embedding, abs=1e-6)
    assert replace(got, embedding=None) == replace(memory, embedding=None)
    assert got.created_at.tzinfo is not None


def test_get_and_delete_missing_raise_not_found(store: Store) -> None:
    with pytest.raises(MemoryNotFoundError):
        store.get("nope")
    with pytest.raises(MemoryNotFoundError):
        store.delete("nope")


def test_duplicate_policies(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "The deploy runs from the main branch only.")
    store.put(memory)
    with pytest.raises(DuplicateMemoryError):
        store.put(memory, DuplicatePolicy.FAIL)
    changed = replace(memory, title="Deploy rule, updated", importance=0.9)
    assert store.put(changed, DuplicatePolicy.SKIP) is False
    assert store.get(memory.id).title == memory.title
    assert store.put(changed, DuplicatePolicy.OVERWRITE) is True
    assert store.get(memory.id).title == "Deploy rule, updated"
    assert store.count() == 1


def test_an_update_of_a_forgotten_memory_writes_nothing(store: Store, embedder: HashEmbedder) -> None:
    """UPDATE replaces what is there and never brings back what a forget removed: an edit read
    before the forget and written after it is a no-op, one at a time and in a batch."""
    memory = make(embedder, "Rotate the staging certificates every quarter.")
    other = make(embedder, "Staging runs on two nodes behind one balancer.")
    store.put_many([memory, other])
    edited = replace(memory, title="Certificate rotation, edited")
    assert store.put(edited, DuplicatePolicy.UPDATE) is True
    assert store.get(memory.id).title == "Certificate rotation, edited"
    store.delete(memory.id)
    assert store.put(edited, DuplicatePolicy.UPDATE) is False
    assert store.put_many([edited, replace(other, importance=0.9)], DuplicatePolicy.UPDATE) == 1
    assert [m.id for m in store.get_many([memory.id, other.id])] == [other.id]
    assert store.get(other.id).importance == 0.9
    assert store.keyword_search("certificates", SearchFilter(scopes=["p"]), 10) == []


def test_overwrite_reindexes_keywords(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Caching uses memcached for sessions.")
    store.put(memory)
    store.put(
        replace(memory, title="Session cache", content="Caching uses redis for sessions now."),
        DuplicatePolicy.OVERWRITE,
    )
    where = SearchFilter(scopes=["p"])
    assert store.keyword_search("memcached", where, 10) == []
    assert [c.id for c in store.keyword_search("redis", where, 10)] == [memory.id]


def test_same_content_in_one_scope_under_another_id_is_refused(store: Store, embedder: HashEmbedder) -> None:
    store.put(make(embedder, "Identical content for both."))
    with pytest.raises(DuplicateMemoryError):
        store.put(make(embedder, "Identical content for both."))
    store.put(make(embedder, "Identical content for both.", scope="other"))
    assert store.count() == 2


def test_find_by_hash_is_per_scope(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Hash lookups are scoped.")
    store.put(memory)
    assert store.find_by_hash("p", memory.content_hash) == store.get(memory.id)
    assert store.find_by_hash("other", memory.content_hash) is None


def test_put_many_writes_a_batch_as_put_would(store: Store, embedder: HashEmbedder) -> None:
    memories = [make(embedder, f"imported memory number {i} about zeppelins") for i in range(30)]
    assert store.put_many(memories) == 30
    assert store.count() == 30
    assert len(store.keyword_search("zeppelins", SearchFilter(scopes=["p"]), 50)) == 30  # searchable at once

    fresh = make(embedder, "a new one about zeppelins")
    with pytest.raises(DuplicateMemoryError, match="1 memories were not written"):
        store.put_many([memories[0], fresh])  # the id exists: refused under FAIL, the other written
    assert store.get(fresh.id).content == fresh.content
    skipped = make(embedder, "skipped along with an existing id")
    assert store.put_many([memories[1], skipped], DuplicatePolicy.SKIP) == 1

    rewritten = replace(
        memories[2],
        content="rewritten memory about airships",
        content_hash=content_hash("rewritten memory about airships"),
    )
    taken = make(embedder, memories[3].content)  # memories[3]'s content under another id
    with pytest.raises(DuplicateMemoryError):
        store.put_many([rewritten, taken], DuplicatePolicy.OVERWRITE)
    assert store.get(memories[2].id).content == "rewritten memory about airships"
    assert store.held_contents([("p", memories[2].content_hash), ("p", rewritten.content_hash)]) == {
        ("p", rewritten.content_hash)
    }
    assert store.find_by_hash("p", memories[2].content_hash) is None
    with pytest.raises(MemoryNotFoundError):
        store.get(taken.id)
    assert store.put(make(embedder, memories[2].content))  # the replaced content is free again
    assert store.count() == 33


def test_held_contents_answers_for_many_keys_at_once(store: Store, embedder: HashEmbedder) -> None:
    first, second = make(embedder, "A first held content."), make(embedder, "A second held content.", scope="q")
    archived = make(embedder, "An archived content is held too.", state=MemoryState.ARCHIVED)
    for memory in (first, second, archived):
        store.put(memory)
    asked = [
        ("p", first.content_hash),
        ("p", first.content_hash),  # asked twice
        ("q", first.content_hash),  # held in another scope only
        ("q", second.content_hash),
        ("p", archived.content_hash),
        ("p", "0" * 64),
    ]
    assert store.held_contents(asked) == {
        ("p", first.content_hash),
        ("q", second.content_hash),
        ("p", archived.content_hash),
    }
    assert store.held_contents([]) == set()
    store.delete(first.id)
    assert store.held_contents(asked[:1]) == set()


def test_count_by_scope(store: Store, embedder: HashEmbedder) -> None:
    assert store.count() == 0
    store.put(make(embedder, "one memory in p"))
    store.put(make(embedder, "one memory in q", scope="q"))
    store.put(make(embedder, "a global memory", scope=""))
    assert store.count() == 3
    assert store.count(["p", ""]) == 2


def test_delete_returns_memory_and_removes_it_from_search(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Zanzibar is the codename of the auth service.")
    other = make(embedder, "Unrelated memory about logging.")
    store.put(memory)
    store.put(other)
    store.add_relation(Relation(memory.id, other.id, RelationType.RELATED_TO))
    assert store.delete(memory.id).id == memory.id
    where = SearchFilter(scopes=["p"])
    assert store.keyword_search("zanzibar", where, 10) == []
    assert store.relations(other.id) == []
    assert store.count() == 1


@pytest.mark.needs_knn
def test_delete_removes_it_from_vector_search(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Zanzibar is the codename of the auth service.")
    store.put(memory)
    store.delete(memory.id)
    assert memory.id not in [c.id for c in store.vector_search(memory.embedding or [], SearchFilter(scopes=["p"]), 10)]


def _two_teams(store: Store, embedder: HashEmbedder) -> tuple[Memory, Memory]:
    team_a = make(embedder, "Team A secret: kiwi rollout plan", scope="team-a")
    team_b = make(embedder, "Team B note: kiwi rollout plan", scope="team-b")
    store.put(team_a)
    store.put(team_b)
    return team_a, team_b


def test_scope_isolation_in_keyword_search(store: Store, embedder: HashEmbedder) -> None:
    _, team_b = _two_teams(store, embedder)
    assert [c.id for c in store.keyword_search("kiwi rollout", SearchFilter(scopes=["team-b"]), 10)] == [team_b.id]


@pytest.mark.needs_knn
def test_scope_isolation_in_vector_search(store: Store, embedder: HashEmbedder) -> None:
    team_a, team_b = _two_teams(store, embedder)
    where = SearchFilter(scopes=["team-b"])
    assert [c.id for c in store.vector_search(team_a.embedding or [], where, 10)] == [team_b.id]


def test_keyword_search_finds_a_rare_exact_term(store: Store, embedder: HashEmbedder) -> None:
    for i in range(20):
        store.put(make(embedder, f"Routine note number {i} about the build pipeline."))
    rare = make(embedder, "The flag XJ9000 disables the legacy importer.")
    store.put(rare)
    hits = store.keyword_search("what does XJ9000 do?", SearchFilter(scopes=["p"]), 5)
    assert hits[0].id == rare.id
    assert all(a.score >= b.score for a, b in pairwise(hits))


def test_keyword_search_survives_query_syntax(store: Store, embedder: HashEmbedder) -> None:
    store.put(make(embedder, "Quotes and operators are plain words here."))
    where = SearchFilter(scopes=["p"])
    for text in ['"unbalanced', "NOT AND OR", "a* b^ c:d (e", "", "   ", "???"]:
        store.keyword_search(text, where, 5)  # must not raise
    assert store.keyword_search("", where, 5) == []


def test_keyword_search_stems_words(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Deployments happen on Tuesdays.")
    store.put(memory)
    assert [c.id for c in store.keyword_search("deployment", SearchFilter(scopes=["p"]), 5)] == [memory.id]


@pytest.mark.needs_knn
def test_vector_search_returns_exact_match_first(store: Store, embedder: HashEmbedder) -> None:
    memories = [make(embedder, f"distinct memory {word} text") for word in ("alpha", "bravo", "charlie", "delta")]
    for m in memories:
        store.put(m)
    target = memories[2]
    hits = store.vector_search(target.embedding or [], SearchFilter(scopes=["p"]), 10)
    assert hits[0].id == target.id
    assert hits[0].score == pytest.approx(1.0, abs=COSINE_TOLERANCE)
    assert len(hits) == 4


def test_vector_search_dimension_mismatch_raises(store: Store) -> None:
    with pytest.raises(EmbeddingMismatchError):
        store.vector_search([0.1, 0.2], SearchFilter(scopes=["p"]), 5)


def test_put_with_wrong_dimension_raises_and_writes_nothing(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Vector of the wrong size.")
    with pytest.raises(EmbeddingMismatchError):
        store.put(replace(memory, embedding=[0.5] * 3))
    assert store.count() == 0


def test_limit_is_respected(store: Store, embedder: HashEmbedder) -> None:
    for i in range(12):
        store.put(make(embedder, f"pipeline memory {i} about caching"))
    where = SearchFilter(scopes=["p"])
    assert len(store.keyword_search("caching pipeline", where, 5)) == 5
    assert store.keyword_search("caching pipeline", where, 0) == []


@pytest.mark.needs_knn
def test_vector_limit_is_respected(store: Store, embedder: HashEmbedder) -> None:
    for i in range(12):
        store.put(make(embedder, f"pipeline memory {i} about caching"))
    assert len(store.vector_search(embedder.embed_queries(["caching"])[0], SearchFilter(scopes=["p"]), 7)) == 7


def _filter_cases(store: Store, embedder: HashEmbedder) -> list[tuple[SearchFilter, set[str]]]:
    now = datetime.now(UTC)
    old = make(embedder, "Kafka consumer lag fix", created_at=now - timedelta(days=30), tags=["kafka"])
    new = make(embedder, "Kafka consumer lag decision", memory_type=MemoryType.DECISION, created_at=now, tags=["ops"])
    archived = make(embedder, "Kafka consumer lag archived", state=MemoryState.ARCHIVED)
    for m in (old, new, archived):
        store.put(m)
    return [
        (SearchFilter(scopes=["p"]), {old.id, new.id}),
        (SearchFilter(scopes=["p"], memory_types=[MemoryType.DECISION]), {new.id}),
        (SearchFilter(scopes=["p"], tags=["kafka", "nope"]), {old.id}),
        (SearchFilter(scopes=["p"], created_after=now - timedelta(days=1)), {new.id}),
        (SearchFilter(scopes=["p"], created_before=now - timedelta(days=1)), {old.id}),
        (SearchFilter(scopes=["p"], states=[MemoryState.ARCHIVED]), {archived.id}),
        (SearchFilter(scopes=["p"], exclude_ids=[old.id]), {new.id}),
    ]


def test_filters_apply_inside_keyword_search(store: Store, embedder: HashEmbedder) -> None:
    for where, expected in _filter_cases(store, embedder):
        assert {c.id for c in store.keyword_search("kafka consumer lag", where, 10)} == expected, where


@pytest.mark.needs_knn
def test_filters_apply_inside_vector_search(store: Store, embedder: HashEmbedder) -> None:
    query_vector = embedder.embed_queries(["kafka consumer lag"])[0]
    for where, expected in _filter_cases(store, embedder):
        assert {c.id for c in store.vector_search(query_vector, where, 10)} == expected, where


def test_empty_store_searches_return_nothing(store: Store, embedder: HashEmbedder) -> None:
    assert store.keyword_search("anything", SearchFilter(scopes=["p"]), 10) == []
    assert store.get_many(["a", "b"]) == []
    assert store.find_by_hash("p", "0" * 64) is None


@pytest.mark.needs_knn
def test_empty_store_vector_search_returns_nothing(store: Store, embedder: HashEmbedder) -> None:
    assert store.vector_search(embedder.embed_queries(["anything"])[0], SearchFilter(scopes=["p"]), 10) == []


def test_get_many_keeps_order_and_skips_unknown(store: Store, embedder: HashEmbedder) -> None:
    a, b = make(embedder, "first of two memories"), make(embedder, "second of two memories")
    store.put(a)
    store.put(b)
    assert [m.id for m in store.get_many([b.id, "missing", a.id])] == [b.id, a.id]


def test_get_many_without_vectors_reads_the_same_memories_but_their_vectors(
    store: Store, embedder: HashEmbedder
) -> None:
    a, b = make(embedder, "first of two memories"), make(embedder, "second of two memories")
    store.put(a)
    store.put(b)
    whole = store.get_many([b.id, "missing", a.id])
    bare = store.get_many([b.id, "missing", a.id], vectors=False)
    assert all(m.embedding is not None for m in whole)
    assert [m.embedding for m in bare] == [None, None]
    assert [replace(m, embedding=None) for m in whole] == bare


def test_record_access_counts(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "A memory that gets recalled.")
    store.put(memory)
    before = store.get(memory.id)
    at = datetime(2026, 5, 1, tzinfo=UTC)
    store.record_access([memory.id, "unknown"], at)
    store.record_access([memory.id], at)
    got = store.get(memory.id)
    assert got.access_count == 2
    assert got.last_accessed_at == at
    assert replace(got, access_count=before.access_count, last_accessed_at=before.last_accessed_at) == before


def test_memory_without_embedding_is_found_by_keywords(store: Store, embedder: HashEmbedder) -> None:
    memory = replace(make(embedder, "Plain text memory about zebras."), embedding=None)
    store.put(memory)
    assert [c.id for c in store.keyword_search("zebras", SearchFilter(scopes=["p"]), 5)] == [memory.id]
    assert store.get(memory.id).embedding is None


@pytest.mark.needs_knn
def test_memory_without_embedding_is_not_found_by_vector(store: Store, embedder: HashEmbedder) -> None:
    memory = replace(make(embedder, "Plain text memory about zebras."), embedding=None)
    store.put(memory)
    assert store.vector_search(embedder.embed_queries(["zebras"])[0], SearchFilter(scopes=["p"]), 5) == []


def test_write_resolved_inserts_then_hands_the_duplicate_to_decide(store: Store, embedder: HashEmbedder) -> None:
    first = make(embedder, "The build cache lives in S3.")
    seen: list[Memory | None] = []

    def decide(existing: Memory | None) -> Resolution:
        seen.append(existing)
        if existing is None:
            return Resolution(WriteOutcome.STORED, first)
        return Resolution(WriteOutcome.REINFORCED, replace(existing, access_count=existing.access_count + 1))

    assert store.write_resolved(first, decide).outcome is WriteOutcome.STORED
    again = make(embedder, "The build cache lives in S3.")
    resolution = store.write_resolved(again, decide)
    assert resolution.outcome is WriteOutcome.REINFORCED
    assert seen[0] is None
    assert seen[1] is not None and seen[1].id == first.id
    assert store.count() == 1
    assert store.get(first.id).access_count == 1


def test_write_resolved_loses_no_update_under_concurrency(store: Store, embedder: HashEmbedder) -> None:
    memory = make(embedder, "Counted by many writers at once.")
    store.put(memory)

    def bump(existing: Memory | None) -> Resolution:
        assert existing is not None
        return Resolution(WriteOutcome.REINFORCED, replace(existing, access_count=existing.access_count + 1))

    threads = [threading.Thread(target=lambda: store.write_resolved(memory, bump)) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.get(memory.id).access_count == 16


def test_write_resolved_many_resolves_in_order_and_later_copies_see_earlier_ones(
    store: Store, embedder: HashEmbedder
) -> None:
    held = make(embedder, "Deploys run from the release branch.")
    store.put(held)
    batch = [
        make(embedder, "Tokens expire after one hour."),
        make(embedder, "Deploys run from the release branch."),  # already stored
        make(embedder, "The queue is drained before embed."),
        make(embedder, "Tokens expire after one hour."),  # a copy of the batch's first
    ]
    seen: list[tuple[str, str | None]] = []

    def decide(incoming: Memory, existing: Memory | None) -> Resolution:
        seen.append((incoming.id, None if existing is None else existing.id))
        if existing is None:
            return Resolution(WriteOutcome.STORED, incoming)
        return Resolution(WriteOutcome.REINFORCED, replace(existing, access_count=existing.access_count + 1))

    outcomes = [r.outcome for r in store.write_resolved_many(batch, decide)]
    assert outcomes == [WriteOutcome.STORED, WriteOutcome.REINFORCED, WriteOutcome.STORED, WriteOutcome.REINFORCED]
    # Which memory each decision saw; the order of the calls is the backend's (bulk backends decide new content first).
    assert sorted(seen, key=str) == sorted(
        [(batch[0].id, None), (batch[1].id, held.id), (batch[2].id, None), (batch[3].id, batch[0].id)], key=str
    )
    assert store.count() == 3
    assert store.get(held.id).access_count == 1
    assert store.get(batch[0].id).access_count == 1
    assert store.get(batch[2].id).embedding == pytest.approx(batch[2].embedding, abs=1e-6)


def test_list_memories_is_newest_first_within_the_filter_with_vectors(store: Store, embedder: HashEmbedder) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    made = [
        make(embedder, f"listed memory number {i}", created_at=start + timedelta(days=i), updated_at=start)
        for i in range(5)
    ]
    archived = make(embedder, "an archived one", state=MemoryState.ARCHIVED, created_at=start + timedelta(days=9))
    elsewhere = make(embedder, "another scope's", scope="q", created_at=start + timedelta(days=9))
    for m in [*made, archived, elsewhere]:
        store.put(m)
    listed = store.list_memories(SearchFilter(scopes=["p"]), 10)
    assert [m.id for m in listed] == [m.id for m in reversed(made)]
    assert listed[0].embedding == pytest.approx(made[-1].embedding)
    bare = store.list_memories(SearchFilter(scopes=["p"]), 10, vectors=False)
    assert [m.embedding for m in bare] == [None] * 5
    assert [replace(m, embedding=None) for m in listed] == bare  # the rest as it is
    recent = store.list_memories(SearchFilter(scopes=["p"], created_after=start + timedelta(days=3)), 10)
    assert [m.id for m in recent] == [made[4].id, made[3].id]
    assert [m.id for m in store.list_memories(SearchFilter(scopes=["p"]), 2)] == [made[4].id, made[3].id]
    every_state = SearchFilter(scopes=["p"], states=tuple(MemoryState))
    assert store.list_memories(every_state, 10)[0].id == archived.id
    assert store.list_memories(SearchFilter(scopes=["p"]), 0) == []


def test_list_memories_pages_through_ties_and_filters_by_author(store: Store, embedder: HashEmbedder) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    # Seven memories, three of them created at the same instant: pages must not lose or repeat any.
    made = [
        make(embedder, f"paged memory {i}", created_at=start + timedelta(days=min(i, 3)), author=f"a{i % 2}")
        for i in range(7)
    ]
    for m in made:
        store.put(m)
    every = SearchFilter(scopes=["p"])
    seen: list[str] = []
    after = None
    while page := store.list_memories(every, 3, after=after):
        seen += [m.id for m in page]
        after = PageMark(page[-1].created_at, page[-1].id)
    expected = sorted(made, key=lambda m: (-m.created_at.timestamp(), m.id))
    assert seen == [m.id for m in expected]
    by_a1 = store.list_memories(every, 10, authors=["a1"])
    assert [m.id for m in by_a1] == [m.id for m in expected if m.author == "a1"]
    assert store.list_memories(every, 10, authors=["nobody"]) == []


def test_scopes_lists_each_scope_holding_a_memory_once(store: Store, embedder: HashEmbedder) -> None:
    assert store.scopes() == []
    for scope in ("team/b", "global", "team/a", "team/b"):
        store.put(make(embedder, f"a memory of {scope} {new_memory_id()}", scope=scope))
    assert store.scopes() == ["global", "team/a", "team/b"]


def test_tally_counts_each_type_and_state_of_the_scopes(store: Store, embedder: HashEmbedder) -> None:
    assert store.tally(["p"]) == {}
    store.put(make(embedder, "a fact of p"))
    store.put(make(embedder, "another fact of p"))
    store.put(make(embedder, "a decision of p", memory_type=MemoryType.DECISION))
    store.put(make(embedder, "an archived fact of p", state=MemoryState.ARCHIVED))
    store.put(make(embedder, "a fact of q", scope="q"))
    assert store.tally(["p"]) == {
        (MemoryType.FACT, MemoryState.WORKING): 2,
        (MemoryType.DECISION, MemoryState.WORKING): 1,
        (MemoryType.FACT, MemoryState.ARCHIVED): 1,
    }
    assert sum(store.tally(["p", "q"]).values()) == 5
    assert store.tally_by_scope() == {"p": store.tally(["p"]), "q": {(MemoryType.FACT, MemoryState.WORKING): 1}}
