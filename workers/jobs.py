"""Job functions: the units of work a runner executes, in-process or on a worker.

Each takes ids and small payloads and is idempotent, so a redelivered job does no harm: the
memory id is assigned by the gateway, and re-running ``memorize`` on a stored id is a no-op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from hivemem.embedding import Embedder
from hivemem.model import DuplicatePolicy, Memory, MemoryType
from hivemem.resolution import EXACT_ONLY, Resolution, ResolutionPolicy, resolve
from search.base import Store
from search.capabilities import ResolvesByMeaning
from workers.lifecycle import apply_links, supersede_earlier_progress
from workers.lifecycle_tuning import LifecycleTuning
from workers.spans import step

__all__ = ["embed_new", "embedded", "memorize", "memorize_many", "record_access", "resolution_policy", "write_all"]


def resolution_policy(model_id: str, tuning: LifecycleTuning | None = None) -> ResolutionPolicy:
    """The write-time resolution ``tuning`` asks for (None: as configured) for the vectors of the
    model ``model_id``, read against its cosine bands (:mod:`hivemem.cosine_bands`)."""
    tuning = tuning or LifecycleTuning()
    bands = tuning.bands(model_id)
    return ResolutionPolicy(
        neighbours=tuning.resolution_neighbours,
        reinforce_at=bands.same_fact,
        contradiction_at=bands.same_subject,
        auto_link_at=bands.related,
        named_change_at=bands.named_change,
    )


def embedded(embedder: Embedder, memories: Sequence[Memory]) -> list[Memory]:
    """``memories`` with their vectors, from one embedder call."""
    if not memories:
        return []
    # Read before embedding: a model switched meanwhile (a re-embed) labels these vectors with the
    # old model, which the store then refuses, rather than the new one, which it would take.
    model = embedder.model_id
    with step("embed", texts=len(memories), model=model):
        vectors = embedder.embed_passages([m.embedding_text() for m in memories])
    return [replace(m, embedding=v, embedding_model=model) for m, v in zip(memories, vectors, strict=True)]


def memorize(
    store: Store, embedder: Embedder, incoming: Memory, now: datetime, policy: ResolutionPolicy = EXACT_ONLY
) -> Resolution:
    """Resolve ``incoming`` against its scope (embed → resolve → write) and store the outcome.

    Exact duplicates (same content hash in the scope) reinforce the stored memory and need no
    embedding; the resolution and its write are one atomic store operation, so two processes
    writing the same fact at once end with one memory and no lost reinforcement.
    """
    return memorize_many(store, embedder, [incoming], now, policy)[0]


def memorize_many(
    store: Store,
    embedder: Embedder,
    incoming: Sequence[Memory],
    now: datetime,
    policy: ResolutionPolicy = EXACT_ONLY,
) -> list[Resolution]:
    """Bulk memorize (imports, benchmarks): one embedder call for every memory that needs a vector.

    Outcomes are those of one ``memorize`` per memory, in order: a later copy of content earlier
    in the batch reinforces it.
    """
    return write_all(store, embedder, embed_new(store, embedder, incoming), now, policy)


def embed_new(store: Store, embedder: Embedder, incoming: Sequence[Memory]) -> list[Memory]:
    """The embed step: ``incoming`` with vectors, in one embedder call, for every memory that needs one.

    Content already stored in its scope, or repeated earlier in the batch, will only reinforce, so
    it is not embedded.
    """
    first_of_content: dict[tuple[str, str], int] = {}
    for i, memory in enumerate(incoming):
        first_of_content.setdefault((memory.scope, memory.content_hash), i)
    held = store.held_contents(list(first_of_content))
    new = [i for key, i in first_of_content.items() if key not in held]
    ready = dict(zip(new, embedded(embedder, [incoming[i] for i in new]), strict=True))
    return [ready.get(i, memory) for i, memory in enumerate(incoming)]


def write_all(
    store: Store,
    embedder: Embedder,
    memories: Sequence[Memory],
    now: datetime,
    policy: ResolutionPolicy = EXACT_ONLY,
) -> list[Resolution]:
    """The resolve-and-write step, in order, as one store unit (see ``Store.write_resolved_many``).

    With ``policy.neighbours``, on a store that can (:class:`search.capabilities.ResolvesByMeaning`), each
    memory is resolved against its nearest memories too: reinforce, merge or supersede.
    """
    with step("store.write", memories=len(memories), store=type(store).__name__):
        if policy.neighbours and isinstance(store, ResolvesByMeaning):
            resolutions = store.write_planned(
                memories,
                lambda incoming, held, near: resolve(incoming, held, now, near, policy),
                neighbours=policy.neighbours,
            )
        else:
            resolutions = store.write_resolved_many(memories, lambda incoming, held: resolve(incoming, held, now))
    for i, resolution in enumerate(resolutions):
        if resolution.memory.embedding is None:
            # Stored without a vector: the duplicate seen before embedding vanished in between.
            memory = embedded(embedder, [resolution.memory])[0]
            store.put(memory, DuplicatePolicy.UPDATE)  # one forgotten meanwhile stays forgotten
            resolutions[i] = Resolution(resolution.outcome, memory)
    if any(m.requested_links for m in memories):
        # After the unit: an edge's far end may be any memory, and closing a goal writes several.
        effects = apply_links(store, memories, resolutions, now)
        resolutions = [replace(r, effects=e) if e else r for r, e in zip(resolutions, effects, strict=True)]
    if any(m.memory_type is MemoryType.PROGRESS for m in memories):
        supersede_earlier_progress(store, memories, resolutions, now)
    return resolutions


def record_access(store: Store, memory_ids: Sequence[str], at: datetime) -> None:
    """Access reinforcement after a recall: counts and last-access times, written in the background."""
    store.record_access(list(memory_ids), at)
