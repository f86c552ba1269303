"""What a scope's memory report says (``memory_status``): counts by type and state, indexed
documents, working failures by component and severity, features not done, the last sleep."""

from __future__ import annotations

from datetime import datetime

from hivemem.answers import FeatureStatus, MemoryStatus, StaleMemory
from hivemem.model import MemoryState, MemoryType, utcnow
from hivemem.staleness import StalenessTuning, stale_days
from search import SearchFilter, Store
from workers.lifecycle import last_sleep

__all__ = ["memory_status", "stale_memories", "unfinished_features"]

_STATUS_SCAN = 2000  # the newest failures and progress notes a status report reads
_STALE_SHOWN = 20


def stale_memories(store: Store, name: str, now: datetime) -> list[StaleMemory]:
    """The working memories of scope ``name`` past their type's verification age, longest first.
    Only those created before the age can be past it: each type reads its newest such few hundred."""
    tuning = StalenessTuning()
    found: list[StaleMemory] = []
    for memory_type in (MemoryType.FACT, MemoryType.PROGRESS, MemoryType.FAILURE):
        age = tuning.age_of(memory_type)
        assert age is not None  # these three go stale
        old = SearchFilter(
            scopes=[name], states=(MemoryState.WORKING,), memory_types=(memory_type,), created_before=now - age
        )
        for memory in store.list_memories(old, _STATUS_SCAN // 4, vectors=False):
            days = stale_days(memory, now, tuning)
            if days is not None and not memory.superseded_at(now):
                found.append(StaleMemory(id=memory.id, title=memory.title, memory_type=memory_type,
                                         verified_at=memory.last_verified, days=days))  # fmt: skip
    return sorted(found, key=lambda s: -s.days)[:_STALE_SHOWN]


def unfinished_features(store: Store, name: str, scan: int = _STATUS_SCAN) -> list[FeatureStatus]:
    """The latest progress note of each feature of scope ``name`` that is not done, newest first,
    from its newest ``scan`` notes."""
    features: dict[str, FeatureStatus] = {}
    progress = SearchFilter(scopes=[name], memory_types=(MemoryType.PROGRESS,))
    # Newest first: the first note of a feature is its latest.
    for note in store.list_memories(progress, scan, vectors=False):
        feature = str(note.details.get("feature", note.title))
        if feature in features:
            continue
        features[feature] = FeatureStatus(
            feature=feature,
            status=str(note.details.get("status", "unknown")),
            completion=note.details.get("completion"),
            blockers=list(note.details.get("blockers", [])),
            memory_id=note.id,
            updated_at=note.updated_at,
        )
    return [f for f in features.values() if f.status != "done"]


def memory_status(
    store: Store, name: str, *, queue_depth: dict[str, int], rerank_fallbacks: dict[str, int]
) -> MemoryStatus:
    """The report of scope ``name``, with the job queues' depths and the rerank fallbacks beside it."""
    by_type: dict[str, dict[str, int]] = {}
    for (kind, state), count in sorted(store.tally([name]).items()):
        by_type.setdefault(kind.value, {})[state.value] = count
    failures: dict[str, dict[str, int]] = {}
    working = SearchFilter(scopes=[name], states=(MemoryState.WORKING,), memory_types=(MemoryType.FAILURE,))
    for failure in store.list_memories(working, _STATUS_SCAN, vectors=False):
        component = str(failure.details.get("component", "unknown"))
        severity = str(failure.details.get("severity", "unknown"))
        failures.setdefault(component, {}).setdefault(severity, 0)
        failures[component][severity] += 1
    sources = store.sources([name])
    return MemoryStatus(
        stale=stale_memories(store, name, utcnow()),
        scope=name,
        total=sum(sum(states.values()) for states in by_type.values()),
        by_type=by_type,
        documents=sum(1 for source in sources if source.searchable),
        documents_failed=sum(1 for source in sources if source.failed),
        failures_by_component=failures,
        active_features=unfinished_features(store, name),
        last_consolidation=last_sleep(store, name),
        queue_depth=queue_depth,
        rerank_fallbacks=rerank_fallbacks,
    )
