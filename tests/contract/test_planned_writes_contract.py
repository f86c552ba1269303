"""The ``ResolvesByMeaning`` clause of the Store contract (search/base.py), on every backend that has it.

Vectors are written by hand so the cosines a decision sees are known exactly. The neighbours come
from each store's vector index: on OpenSearch that is the k-NN query, which osmem-server lacks, so
the tests that ask for neighbours are ``needs_knn``: the real node answers them with its k-NN
plugin, and they skip on osmem-server.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from hivemem.hashing import content_hash
from hivemem.model import AuditEvent, Memory, MemoryState, Relation, RelationType, WriteOutcome, new_memory_id, utcnow
from hivemem.resolution import Neighbour, Resolution
from search import SearchFilter, Store
from search.capabilities import ResolvesByMeaning


@pytest.fixture
def planner(store: Store) -> ResolvesByMeaning:
    if not isinstance(store, ResolvesByMeaning):
        pytest.skip(f"{type(store).__name__} resolves exact duplicates only (no write_planned yet)")
    return store


def _unit(*values: float, dimension: int) -> list[float]:
    vector = [*values, *([0.0] * (dimension - len(values)))]
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


def _memory(content: str, vector: list[float], *, scope: str = "p", state: MemoryState = MemoryState.WORKING) -> Memory:
    return Memory(
        id=new_memory_id(),
        scope=scope,
        title=content[:30],
        content=content,
        content_hash=content_hash(content),
        state=state,
        embedding=vector,
        embedding_model="hash-64",
    )


@pytest.mark.needs_knn
def test_a_decision_sees_the_nearest_memories_of_its_scope_with_their_cosines(
    store: Store, planner: ResolvesByMeaning
) -> None:
    d = store.dimension
    near = _memory("The deploy runs at noon.", _unit(1.0, 0.2, dimension=d))
    far = _memory("Invoices go out monthly.", _unit(0.0, 0.0, 1.0, dimension=d))
    archived = _memory("An archived note on deploys.", _unit(1.0, 0.3, dimension=d), state=MemoryState.ARCHIVED)
    elsewhere = _memory("The deploy runs at noon.", _unit(1.0, 0.2, dimension=d), scope="other")
    for memory in (near, far, archived, elsewhere):
        store.put(memory)
    incoming = _memory("Deploys start at 12:00.", _unit(1.0, dimension=d))
    seen: list[Sequence[Neighbour]] = []

    def decide(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
        assert held is None
        seen.append(neighbours)
        return Resolution(WriteOutcome.STORED, memory)

    planner.write_planned([incoming], decide, neighbours=2)
    cosines = {n.memory.id: round(n.cosine, 4) for n in seen[0]}
    # The two nearest of its own scope, best first, in any state; never another scope's.
    assert list(cosines) == [near.id, archived.id]
    assert cosines[near.id] == round(1 / math.sqrt(1.04), 4)
    assert seen[0][1].memory.state is MemoryState.ARCHIVED


@pytest.mark.needs_knn
def test_a_plan_is_written_whole_and_later_memories_of_the_batch_see_it(
    store: Store, planner: ResolvesByMeaning
) -> None:
    d = store.dimension
    old = _memory("Builds use Maven.", _unit(1.0, dimension=d))
    store.put(old)
    first = _memory("Builds moved from Maven to Gradle.", _unit(1.0, 0.5, dimension=d))
    second = _memory("Gradle builds use the build cache.", _unit(1.0, 0.6, dimension=d))
    now = utcnow()
    seen: dict[str, list[str]] = {}

    def decide(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
        seen[memory.id] = [n.memory.id for n in neighbours]
        if memory.id != first.id:
            return Resolution(WriteOutcome.STORED, memory)
        return Resolution(
            WriteOutcome.SUPERSEDED,
            memory,
            old.id,
            updates=(replace(old, valid_to=now),),
            relations=(Relation(memory.id, old.id, RelationType.SUPERSEDES),),
            audit=(AuditEvent("supersede", memory.id, memory.scope, "", {"superseded": old.id}),),
        )

    planner.write_planned([first, second], decide, neighbours=5)
    assert store.get(old.id).valid_to is not None
    assert store.relations(first.id) == store.relations(old.id)
    assert [(r.source_id, r.target_id, r.type) for r in store.relations(old.id)] == [
        (first.id, old.id, RelationType.SUPERSEDES)
    ]
    # The second memory saw the first, written earlier in the same unit, and the old one.
    assert set(seen[second.id]) == {first.id, old.id}
    assert store.count(["p"]) == 3


@pytest.mark.parametrize("neighbours", [pytest.param(3, marks=pytest.mark.needs_knn), 0])
def test_a_failed_decision_writes_nothing_of_the_batch(
    store: Store, planner: ResolvesByMeaning, neighbours: int
) -> None:
    d = store.dimension
    batch = [_memory("One fact.", _unit(1.0, dimension=d)), _memory("Another fact.", _unit(0.0, 1.0, dimension=d))]

    def decide(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
        if memory.id == batch[1].id:
            raise RuntimeError("the policy failed")
        return Resolution(WriteOutcome.STORED, memory)

    with pytest.raises(RuntimeError):
        planner.write_planned(batch, decide, neighbours=neighbours)
    assert store.count(["p"]) == 0
    assert store.find_by_hash("p", batch[0].content_hash) is None
    assert store.keyword_search("fact", SearchFilter(scopes=["p"]), 5) == []
    assert store.audit_log() == []


def _reinforcing(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
    if held is None:
        return Resolution(WriteOutcome.STORED, memory)
    return Resolution(WriteOutcome.REINFORCED, replace(held, access_count=held.access_count + 1), held.id)


def test_a_later_memory_of_the_batch_finds_an_earlier_one_holding_its_content(
    store: Store, planner: ResolvesByMeaning
) -> None:
    d = store.dimension
    first = _memory("Releases are tagged from main.", _unit(1.0, dimension=d))
    copy = replace(_memory("Releases are tagged from main.", _unit(1.0, dimension=d)))
    outcomes = planner.write_planned([first, copy], _reinforcing, neighbours=0)
    assert [r.outcome for r in outcomes] == [WriteOutcome.STORED, WriteOutcome.REINFORCED]
    assert outcomes[1].memory.id == first.id
    assert store.get(first.id).access_count == 1
    assert store.count(["p"]) == 1


def test_a_plan_that_rewrites_its_holder_moves_the_content_with_it(store: Store, planner: ResolvesByMeaning) -> None:
    d = store.dimension
    old = _memory("The cache holds sessions.", _unit(1.0, dimension=d))
    store.put(old)
    merged_text = "The cache holds sessions and rate-limit counters."
    incoming = _memory("The cache holds sessions.", _unit(1.0, dimension=d))

    def merge(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
        assert held is not None and held.id == old.id
        rewritten = replace(held, content=merged_text, content_hash=content_hash(merged_text))
        audit = AuditEvent("merge", held.id, held.scope, "", {"merged": memory.id})
        return Resolution(WriteOutcome.MERGED, rewritten, held.id, audit=(audit,))

    planner.write_planned([incoming], merge, neighbours=0)
    assert store.get(old.id).content == merged_text
    assert store.find_by_hash("p", content_hash(merged_text)) == store.get(old.id)
    # The old wording is nobody's now: writing it again stores a new memory.
    assert store.find_by_hash("p", old.content_hash) is None
    assert store.held_contents([("p", old.content_hash), ("p", content_hash(merged_text))]) == {
        ("p", content_hash(merged_text))
    }
    again = _memory("The cache holds sessions.", _unit(1.0, dimension=d))
    assert planner.write_planned([again], _reinforcing, neighbours=0)[0].outcome is WriteOutcome.STORED
    assert [e.action for e in store.audit_log(old.id)] == ["merge"]


def test_planned_writers_into_one_scope_take_turns(store: Store, planner: ResolvesByMeaning) -> None:
    d = store.dimension
    inside = 0
    overlaps: list[int] = []
    guard = threading.Lock()

    def watched(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
        nonlocal inside
        with guard:
            inside += 1
            overlaps.append(inside)
        # Widens the window another writer would have to slip in; it cannot, so nothing waits on it.
        time.sleep(0.01)
        with guard:
            inside -= 1
        return _reinforcing(memory, held, neighbours)

    def write(n: int) -> None:
        memory = _memory("Every writer says the same thing.", _unit(1.0, float(n), dimension=d))
        planner.write_planned([memory], watched, neighbours=0)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))
    assert max(overlaps) == 1 and len(overlaps) == 8
    (held,) = store.list_memories(SearchFilter(scopes=["p"]), 10)
    assert held.access_count == 7  # one stored, seven reinforced: the one-writer result
