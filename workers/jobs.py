"""Job functions: the units of work a runner executes, in-process or on a worker.

Each takes ids and small payloads and is idempotent, so a redelivered job does no harm: the
memory id is assigned by the gateway, and re-running ``memorize`` on a stored id is a no-op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from hivemem.embedding import Embedder
from hivemem.errors import DuplicateMemoryError
from hivemem.model import DuplicatePolicy, Memory, WriteOutcome
from hivemem.resolution import Resolution, resolve
from search.base import Store

__all__ = ["memorize", "memorize_many", "record_access"]


def _write(store: Store, embedder: Embedder, incoming: Memory, now: datetime) -> Resolution:
    resolution = resolve(incoming, store.find_by_hash(incoming.scope, incoming.content_hash), now)
    if resolution.outcome is WriteOutcome.REINFORCED:
        # An exact duplicate needs no embedding: the stored one already has it.
        store.put(resolution.memory, DuplicatePolicy.OVERWRITE)
        return resolution
    vector = embedder.embed_passages([incoming.embedding_text()])[0]
    memory = replace(incoming, embedding=vector, embedding_model=embedder.model_id)
    store.put(memory, DuplicatePolicy.SKIP)  # SKIP: a redelivered job finds its own id stored
    return Resolution(WriteOutcome.STORED, memory)


def memorize(store: Store, embedder: Embedder, incoming: Memory, now: datetime) -> Resolution:
    """Resolve ``incoming`` against its scope (embed → resolve → write) and store the outcome.

    Exact duplicates (same content hash in the scope) reinforce the stored memory. If another
    process stored the same content between our check and our write, the store's uniqueness
    rejects ours and we resolve again, which then reinforces theirs.
    """
    try:
        return _write(store, embedder, incoming, now)
    except DuplicateMemoryError:
        return _write(store, embedder, incoming, now)


def memorize_many(store: Store, embedder: Embedder, incoming: Sequence[Memory], now: datetime) -> list[Resolution]:
    """Bulk memorize (imports, benchmarks): one embedder call for every memory that needs a vector.

    Duplicates within the batch reinforce the first of them, as sequential calls would.
    """
    resolutions: list[Resolution | None] = [None] * len(incoming)
    pending: dict[tuple[str, str], int] = {}
    for i, memory in enumerate(incoming):
        key = (memory.scope, memory.content_hash)
        if key in pending:
            continue
        existing = store.find_by_hash(memory.scope, memory.content_hash)
        if existing is not None and existing.id != memory.id:
            resolutions[i] = memorize(store, embedder, memory, now)
        else:
            pending[key] = i
    order = list(pending.values())
    vectors = embedder.embed_passages([incoming[i].embedding_text() for i in order])
    for i, vector in zip(order, vectors, strict=True):
        memory = replace(incoming[i], embedding=vector, embedding_model=embedder.model_id)
        try:
            store.put(memory, DuplicatePolicy.SKIP)
            resolutions[i] = Resolution(WriteOutcome.STORED, memory)
        except DuplicateMemoryError:
            resolutions[i] = memorize(store, embedder, incoming[i], now)
    for i, memory in enumerate(incoming):
        if resolutions[i] is None:  # a later copy of a memory earlier in this batch
            resolutions[i] = memorize(store, embedder, memory, now)
    return [r for r in resolutions if r is not None]


def record_access(store: Store, memory_ids: Sequence[str], at: datetime) -> None:
    """Access reinforcement after a recall: counts and last-access times, written in the background."""
    store.record_access(list(memory_ids), at)
