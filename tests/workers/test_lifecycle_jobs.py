"""The lifecycle jobs' scheduling: which scopes sleep when, the embedded timer, edges to vanished targets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.hashing import content_hash
from hivemem.model import Link, Memory, MemoryState, MemoryType, RelationType, new_memory_id
from search import SearchFilter, Store, open_store
from workers import jobs
from workers.lifecycle import last_sleep, sleep_due, sleep_policy
from workers.sleep_timer import SleepTimer

NOW = datetime(2026, 8, 3, 12, 0, tzinfo=UTC)
TWINS = [
    "The nightly backup of the orders database runs at 02:00 UTC and takes 40 minutes.",
    "The nightly backup of the orders database runs at 02:00 UTC and takes about 40 minutes.",
    "Nightly backup of the orders database: runs at 02:00 UTC, takes 40 minutes.",
]


@pytest.fixture
def store(tmp_path: Path, embedder: HashEmbedder) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'hive.db'}", embedding_model=embedder.model_id, dimension=64)
    yield opened
    opened.close()


def write(store: Store, embedder: HashEmbedder, scope: str, content: str, **kw: object) -> str:
    memory = Memory(
        id=new_memory_id(),
        scope=scope,
        title=content[:40],
        content=content,
        content_hash=content_hash(content),
        created_at=NOW - timedelta(hours=1),
        updated_at=NOW - timedelta(hours=1),
        **kw,  # type: ignore[arg-type]
    )
    return jobs.memorize(store, embedder, memory, NOW).memory.id


def test_sleep_runs_only_for_the_scopes_that_are_due(store: Store, embedder: HashEmbedder) -> None:
    for scope in ("team/a", "team/b"):
        for text in TWINS:
            write(store, embedder, scope, text)
    first = sleep_due(store, embedder, NOW, sleep_policy(), timedelta(hours=24))
    assert sorted((r.scope, len(r.consolidations)) for r in first) == [("team/a", 1), ("team/b", 1)]
    assert last_sleep(store, "team/a") == NOW
    # Within the interval nothing runs; once it has passed, the scope is looked at again.
    assert sleep_due(store, embedder, NOW + timedelta(hours=23), sleep_policy(), timedelta(hours=24)) == []
    later = sleep_due(store, embedder, NOW + timedelta(hours=25), sleep_policy(), timedelta(hours=24))
    assert sorted(r.scope for r in later) == ["team/a", "team/b"]
    assert all(r.consolidations == () for r in later)  # the sources are consolidated already


def test_goals_conversations_and_old_memories_are_not_slept(store: Store, embedder: HashEmbedder) -> None:
    for text in TWINS:
        write(store, embedder, "team/a", text, memory_type=MemoryType.CONVERSATION)
        write(store, embedder, "team/a", "Goal: " + text, memory_type=MemoryType.GOAL)
    (report,) = sleep_due(store, embedder, NOW, sleep_policy(), timedelta(hours=24))
    assert report.candidates == 0 and report.consolidations == ()
    old_scope = "team/old"
    for text in TWINS:
        write(store, embedder, old_scope, text)
    (late,) = [
        r
        for r in sleep_due(store, embedder, NOW + timedelta(days=8), sleep_policy(), timedelta(0))
        if r.scope == old_scope
    ]
    assert late.candidates == 0  # older than the 7-day window


def test_the_embedded_timer_sleeps_in_the_background_and_stops(store: Store, embedder: HashEmbedder) -> None:
    for text in TWINS:
        write(store, embedder, "team/a", text)
    timer = SleepTimer(
        store, embedder, replace(sleep_policy(), window_days=3650), timedelta(hours=24), startup_delay_s=0
    )
    timer.start()
    deadline = time.monotonic() + 300
    while timer.passes < 1:  # the condition itself: one check completed
        assert time.monotonic() < deadline, "the sleep timer never completed a pass"
        time.sleep(0.01)
    timer.stop()
    every = SearchFilter(scopes=["team/a"], states=tuple(MemoryState))
    kinds = sorted((m.memory_type.value, m.state.value) for m in store.list_memories(every, 10))
    assert kinds == [("fact", "consolidated")] * 3 + [("insight", "working")]


def test_an_edge_to_a_target_forgotten_meanwhile_is_skipped_and_the_memory_kept(
    store: Store, embedder: HashEmbedder
) -> None:
    target = write(store, embedder, "team/a", "A memory that is about to be forgotten.")
    store.delete(target)
    kept = write(
        store, embedder, "team/a", "Points at the forgotten one.", requested_links=(Link(target, RelationType.EXTENDS),)
    )
    assert store.get(kept).content == "Points at the forgotten one."
    assert store.relations(kept) == []
