"""The job functions over a real store: batching, duplicates, idempotent redelivery."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.model import Memory, WriteOutcome, new_memory_id, utcnow
from search import Store, open_store
from workers import jobs


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting how many texts it was asked to embed and in how many calls."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[int] = []

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return super().embed_passages(texts)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'hive.db'}", embedding_model="hash-64", dimension=64)
    yield opened
    opened.close()


def memory(content: str, scope: str = "p") -> Memory:
    return Memory(
        id=new_memory_id(), scope=scope, title=content[:30], content=content, content_hash=content_hash(content)
    )


def test_memorize_many_embeds_once_and_reinforces_duplicates_in_order(store: Store) -> None:
    embedder = CountingEmbedder()
    stored_before = memory("already stored before the batch")
    jobs.memorize(store, embedder, stored_before, utcnow())
    batch = [
        memory("first new memory"),
        memory("already stored before the batch"),
        memory("second new memory"),
        memory("first new memory"),
        memory("first new memory", scope="q"),
    ]
    results = jobs.memorize_many(store, embedder, batch, utcnow())
    assert [r.outcome for r in results] == [
        WriteOutcome.STORED,
        WriteOutcome.REINFORCED,
        WriteOutcome.STORED,
        WriteOutcome.REINFORCED,
        WriteOutcome.STORED,
    ]
    assert results[1].memory.id == stored_before.id
    assert results[3].memory.id == results[0].memory.id
    assert embedder.calls == [1, 3]  # the single memorize, then one call for the three new texts
    assert store.count() == 4
    assert store.get(results[0].memory.id).access_count == 1


def test_a_redelivered_job_changes_nothing(store: Store) -> None:
    embedder = CountingEmbedder()
    incoming = memory("delivered twice by the queue")
    first = jobs.memorize(store, embedder, incoming, utcnow())
    store.record_access([incoming.id], utcnow())
    again = jobs.memorize(store, embedder, incoming, utcnow())
    assert (first.outcome, again.outcome) == (WriteOutcome.STORED, WriteOutcome.STORED)
    assert store.count() == 1
    assert store.get(incoming.id).access_count == 1  # not reset, not bumped


def test_stored_memories_carry_the_embedder_and_its_vector(store: Store) -> None:
    embedder = CountingEmbedder()
    result = jobs.memorize(store, embedder, memory("a memory with a vector"), utcnow())
    stored = store.get(result.memory.id)
    assert stored.embedding_model == "hash-64"
    assert stored.embedding == pytest.approx(embedder.embed_passages([stored.embedding_text()])[0], abs=1e-6)


def test_reinforcing_needs_no_embedding(store: Store) -> None:
    embedder = CountingEmbedder()
    jobs.memorize(store, embedder, memory("embedded only once"), utcnow())
    jobs.memorize(store, embedder, replace(memory("embedded only once"), importance=0.9), utcnow())
    assert embedder.calls == [1]


def test_the_in_process_runner_commits_concurrent_writes_as_one_unit(store: Store) -> None:
    """Group commit: calls that reach the writer while a unit is open are written together, in
    arrival order, and each caller gets its own outcomes back."""
    from concurrent.futures import ThreadPoolExecutor

    from workers.runner import InProcessRunner

    units: list[list[str]] = []
    entered, release = threading.Event(), threading.Event()
    write_planned = store.write_planned  # type: ignore[attr-defined]

    def gated(incoming: Sequence[Memory], decide: object, *, neighbours: int) -> object:
        units.append([m.content for m in incoming])
        if len(units) == 1:
            entered.set()
            assert release.wait(30)
        return write_planned(incoming, decide, neighbours=neighbours)

    store.write_planned = gated  # type: ignore[attr-defined]
    runner = InProcessRunner(store, HashEmbedder(64))
    with ThreadPoolExecutor(max_workers=3) as pool:
        first = pool.submit(runner.memorize, memory("the first writer's fact"))
        assert entered.wait(30)
        second = pool.submit(runner.memorize, memory("the second writer's fact"))
        third = pool.submit(runner.memorize, memory("the second writer's fact"))
        deadline = time.monotonic() + 300
        while len(runner._writes._pending) < 2:  # the calls queued behind the open unit
            assert time.monotonic() < deadline, "the later calls never reached the writer"
            time.sleep(0.001)
        release.set()
        tickets = [first.result(), second.result(), third.result()]
    runner.close()
    assert len(units) == 2 and units[0] == ["the first writer's fact"]
    assert sorted(units[1]) == ["the second writer's fact"] * 2
    outcomes = sorted(t.results[0].outcome for t in tickets[1:])
    assert outcomes == sorted([WriteOutcome.STORED, WriteOutcome.REINFORCED])
    assert tickets[0].results[0].outcome is WriteOutcome.STORED
