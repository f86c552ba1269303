"""``Store.thread_neighbours`` on every backend: a memory's neighbours in its thread, in order."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hivemem.embedding import HashEmbedder
from hivemem.model import Memory, MemoryState
from search import Store
from tests.contract.test_memories_contract import make

START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _turns(embedder: HashEmbedder, store: Store, thread: str, count: int, *, scope: str = "p") -> list[Memory]:
    turns = []
    for i in range(count):
        at = START + timedelta(seconds=i)
        memory = make(embedder, f"turn {i} of {thread} in {scope}", scope=scope, thread=thread, created_at=at)
        store.put(memory)
        turns.append(memory)
    return turns


def test_neighbours_come_nearest_first_on_each_side(store: Store, embedder: HashEmbedder) -> None:
    t = _turns(embedder, store, "session-1", 5)
    _turns(embedder, store, "session-2", 3)
    _turns(embedder, store, "session-1", 3, scope="other")  # the same thread name in another scope
    assert store.thread_neighbours([t[2].id], 2) == {t[2].id: [(t[1].id, 1), (t[0].id, 2), (t[3].id, 1), (t[4].id, 2)]}
    assert store.thread_neighbours([t[0].id, t[4].id], 1) == {t[0].id: [(t[1].id, 1)], t[4].id: [(t[3].id, 1)]}
    assert store.thread_neighbours([t[2].id], 0) == {}


def test_memories_in_no_thread_and_unknown_ids_are_left_out(store: Store, embedder: HashEmbedder) -> None:
    loose = make(embedder, "a memory in no thread")
    store.put(loose)
    (alone,) = _turns(embedder, store, "solo", 1)
    assert store.thread_neighbours([loose.id, "no-such-id", alone.id], 3) == {alone.id: []}
    assert store.thread_neighbours([], 3) == {}


def test_every_state_counts_and_a_tie_in_time_falls_back_to_the_id(store: Store, embedder: HashEmbedder) -> None:
    first, second = (make(embedder, f"same moment {i}", thread="t", created_at=START) for i in range(2))
    earlier, later = sorted((first, second), key=lambda m: m.id)
    store.put(replace(earlier, state=MemoryState.ARCHIVED))
    store.put(later)
    assert store.thread_neighbours([later.id], 1) == {later.id: [(earlier.id, 1)]}
    assert store.thread_neighbours([earlier.id], 1) == {earlier.id: [(later.id, 1)]}


def test_the_rows_recall_reads_carry_their_thread(store: Store, embedder: HashEmbedder) -> None:
    # Recall's thread lift groups its shortlist by (scope, thread) from these rows.
    turn, other_scope = (
        _turns(embedder, store, "session-1", 1)[0],
        _turns(embedder, store, "session-1", 1, scope="q")[0],
    )
    loose = make(embedder, "a memory in no thread")
    store.put(loose)
    read = store.get_many([turn.id, other_scope.id, loose.id], vectors=False)
    assert [(m.scope, m.thread) for m in read] == [("p", "session-1"), ("q", "session-1"), (loose.scope, "")]
