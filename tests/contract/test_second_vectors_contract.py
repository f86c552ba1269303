"""The ``KeepsSecondVectors`` clause of the Store contract (search/base.py), on every backend that has it.

A second model's vectors of every memory, for recall's second dense leg: the SQLite store keeps
them in a table of their own, the OpenSearch store in an index per second model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.errors import EmbeddingMismatchError
from hivemem.hashing import content_hash
from hivemem.model import DuplicatePolicy, Memory, new_memory_id
from search import Store
from search.capabilities import KeepsSecondVectors

FIRST, SECOND = HashEmbedder(64), HashEmbedder(32)
MODEL = SECOND.model_id


@pytest.fixture
def keeper(store: Store) -> KeepsSecondVectors:
    if not isinstance(store, KeepsSecondVectors):
        pytest.skip(f"{type(store).__name__} keeps one vector per memory (no second dense leg)")
    return store


def make(content: str) -> Memory:
    memory = Memory(
        id=new_memory_id(), scope="p", title=content[:30], content=content, content_hash=content_hash(content)
    )
    memory.embedding = FIRST.embed_passages([memory.embedding_text()])[0]
    memory.embedding_model = FIRST.model_id
    return memory


def second_vectors(memories: Sequence[Memory]) -> list[tuple[Memory, list[float]]]:
    return list(zip(memories, SECOND.embed_passages([m.embedding_text() for m in memories]), strict=True))


def test_pending_until_stored_then_scored_best_first(store: Store, keeper: KeepsSecondVectors) -> None:
    memories = [make("retry with exponential backoff"), make("logs are JSON lines"), make("backoff retry budget")]
    for memory in memories:
        store.put(memory)
    assert {m.id for m in keeper.second_vectors_pending(MODEL, 10)} == {m.id for m in memories}
    assert keeper.second_vectors_remaining(MODEL) == 3
    keeper.put_second_vectors(MODEL, SECOND.dimension, second_vectors(memories))
    assert keeper.second_vectors_pending(MODEL, 10) == []
    assert keeper.second_vectors_remaining(MODEL) == 0
    query = SECOND.embed_queries(["exponential backoff retry"])[0]
    scored = keeper.second_vector_scores(MODEL, query, [m.id for m in memories])
    assert scored[0].id == memories[0].id
    assert [c.score for c in scored] == sorted((c.score for c in scored), reverse=True)
    # Only the ids asked for, and nothing for another model.
    assert [c.id for c in keeper.second_vector_scores(MODEL, query, [memories[1].id])] == [memories[1].id]
    assert keeper.second_vector_scores("another-model", query, [m.id for m in memories]) == []


def test_a_rewritten_memory_is_pending_again_and_scores_nothing_meanwhile(
    store: Store, keeper: KeepsSecondVectors
) -> None:
    memory = make("the cache expires after ten minutes")
    store.put(memory)
    keeper.put_second_vectors(MODEL, SECOND.dimension, second_vectors([memory]))
    assert keeper.second_vectors_pending(MODEL, 10) == []
    changed = replace(memory, content="the cache expires after an hour", content_hash=content_hash("after an hour"))
    store.put(changed, DuplicatePolicy.OVERWRITE)
    # Found from where the last look ended (SQLite's change log, OpenSearch's write stamps).
    assert [m.id for m in keeper.second_vectors_pending(MODEL, 10)] == [memory.id]
    query = SECOND.embed_queries(["cache expiry"])[0]
    assert keeper.second_vector_scores(MODEL, query, [memory.id]) == []
    keeper.put_second_vectors(MODEL, SECOND.dimension, second_vectors([changed]))
    assert [c.id for c in keeper.second_vector_scores(MODEL, query, [memory.id])] == [memory.id]


def test_vectors_go_with_their_memory_and_none_is_kept_for_a_deleted_one(
    store: Store, keeper: KeepsSecondVectors
) -> None:
    kept, deleted, gone_before = make("kept"), make("deleted later"), make("deleted before its vector")
    for memory in (kept, deleted, gone_before):
        store.put(memory)
    pending = keeper.second_vectors_pending(MODEL, 10)
    store.delete(gone_before.id)
    keeper.put_second_vectors(MODEL, SECOND.dimension, second_vectors(pending))
    store.delete(deleted.id)
    # Dropping every model's vectors but one that has none counts the rows held: only kept's.
    assert keeper.second_vectors_keep_only("no-such-model") == 1


def test_keep_only_drops_the_other_models_vectors(store: Store, keeper: KeepsSecondVectors) -> None:
    memory = make("a memory embedded by two second models in turn")
    store.put(memory)
    old = HashEmbedder(16)
    keeper.put_second_vectors(old.model_id, old.dimension, [(memory, old.embed_passages(["x"])[0])])
    keeper.put_second_vectors(MODEL, SECOND.dimension, second_vectors([memory]))
    assert keeper.second_vectors_keep_only(MODEL) == 1
    query = SECOND.embed_queries(["two second models"])[0]
    assert [c.id for c in keeper.second_vector_scores(MODEL, query, [memory.id])] == [memory.id]
    assert keeper.second_vector_scores(old.model_id, old.embed_queries(["x"])[0], [memory.id]) == []


def test_a_look_after_a_failure_starts_over(store: Store, keeper: KeepsSecondVectors) -> None:
    memories = [make(f"memory number {n}") for n in range(3)]
    for memory in memories:
        store.put(memory)
    assert len(keeper.second_vectors_pending(MODEL, 10)) == 3
    # The caller failed to store them: without a rescan the log has nothing new to show.
    assert keeper.second_vectors_pending(MODEL, 10) == []
    keeper.second_vectors_rescan(MODEL)
    assert len(keeper.second_vectors_pending(MODEL, 10)) == 3


def test_a_vector_of_the_wrong_size_is_refused(store: Store, keeper: KeepsSecondVectors) -> None:
    memory = make("sized")
    store.put(memory)
    with pytest.raises(EmbeddingMismatchError):
        keeper.put_second_vectors(MODEL, SECOND.dimension, [(memory, [0.1] * 7)])
    assert keeper.second_vectors_remaining(MODEL) == 1


def test_small_looks_name_every_memory_once_with_writes_between(store: Store, keeper: KeepsSecondVectors) -> None:
    """A filler asking one at a time, storing each, while memories keep coming: each is named once,
    and an empty look means none is left."""
    for n in range(3):
        store.put(make(f"written before the looks {n}"))
    named: list[str] = []
    late = [make(f"written between the looks {n}") for n in range(2)]
    for _ in range(20):
        batch = keeper.second_vectors_pending(MODEL, 1)
        if not batch:
            break
        named += [m.id for m in batch]
        keeper.put_second_vectors(MODEL, SECOND.dimension, second_vectors(batch))
        if late:
            store.put(late.pop())
    assert len(named) == len(set(named)) == 5
    assert keeper.second_vectors_remaining(MODEL) == 0
