"""Planned writes on OpenSearch: resolution by meaning, decided and applied under the scope leases.

:meth:`PlannedWriter.write_planned` is the :class:`search.capabilities.ResolvesByMeaning` clause of the
OpenSearch store. Every decision of the unit is taken first, against the exact holder (realtime
GET through the content claim) and the k-NN neighbours of the scope, with the unit's own earlier
writes standing in for what the index cannot see yet (:func:`search.neighbours.nearest`). Only then
is anything written, so a failed decision writes nothing. The writes go in two ``_bulk`` requests:
the content claims of new contents, then every memory, relation and audit record of the unit with
``refresh=true``, so the next unit's k-NN search sees them.

OpenSearch has no multi-document transaction: the unit is atomic towards other planned writes of its
scopes (they wait for the lease, :mod:`search.opensearch.scope_lease`), and every write in it is
idempotent by id, so a unit that fails part-way is retried whole by its job. Writers that take no
lease (imports, access counters, the lifecycle passes) are ordered by the versions read: a memory
whose version moved since the decision read it (a recall bumped its counters) is read again and
written with those counters carried over, the plan's other fields winning, as the later write.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hivemem.errors import StoreUnavailableError
from hivemem.fusion import Candidate
from hivemem.model import AuditEvent, Memory, Relation
from hivemem.resolution import Neighbour, Resolution
from search.base import SearchFilter
from search.capabilities import PlanDecision
from search.neighbours import nearest, neighbour_filter
from search.opensearch.bodies import IndexNames
from search.opensearch.cluster import Cluster
from search.opensearch.docs import audit_lines, memory_doc, relation_doc, relation_id
from search.opensearch.scope_lease import ScopeLeases
from search.opensearch.writes import MemoryWriter, Versioned

__all__ = ["PlannedWriter"]

Json = dict[str, Any]

_MAX_ATTEMPTS = 50

# The store's vector leg: (vector, filter, limit) -> candidates scored by cosine, best first.
VectorSearch = Callable[[Sequence[float], SearchFilter, int], list[Candidate]]


@dataclass(slots=True)
class _Unit:
    """What one planned unit has decided so far and the versions its decisions read."""

    written: dict[str, Memory] = field(default_factory=dict)  # by id, latest version, in first-write order
    versions: dict[str, Versioned] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    audit: list[AuditEvent] = field(default_factory=list)

    def add(self, resolution: Resolution) -> None:
        for memory in resolution.writes:
            self.written[memory.id] = memory
        self.relations += resolution.relations
        self.audit += resolution.audit


def _status(item: Json) -> int:
    return int(item.get("status", 200))


def _with_accesses(ours: Memory, read: Versioned | None, fresh: Versioned | None) -> Memory:
    """``ours``, with the accesses recorded since the decision read the memory carried over."""
    if read is None or fresh is None:
        return ours
    since = fresh.memory.access_count - read.memory.access_count
    if since <= 0:
        return ours
    times = [t for t in (ours.last_accessed_at, fresh.memory.last_accessed_at) if t is not None]
    return replace(ours, access_count=ours.access_count + since, last_accessed_at=max(times, default=None))


class PlannedWriter:
    """The planned-write unit of one store: its cluster, indices, write protocol and vector leg."""

    def __init__(
        self,
        cluster: Cluster,
        names: IndexNames,
        dimension: int,
        writer: MemoryWriter,
        leases: ScopeLeases,
        vector_search: VectorSearch,
    ) -> None:
        self._cluster = cluster
        self._names = names
        self._dimension = dimension
        self._writer = writer
        self._leases = leases
        self._vector_search = vector_search

    def write_planned(self, incoming: Sequence[Memory], decide: PlanDecision, *, neighbours: int) -> list[Resolution]:
        """See :meth:`search.capabilities.ResolvesByMeaning.write_planned`."""
        for memory in incoming:
            memory_doc(memory, self._dimension)  # a bad vector fails here, before the lease is taken
        resolutions: list[Resolution] = []
        with self._leases.held(m.scope for m in incoming):
            unit = _Unit()
            for memory in incoming:
                held = self._holder(memory, unit)
                near = self._neighbours(memory, neighbours, unit) if neighbours and held is None else []
                resolution = decide(memory, held, near)
                unit.add(resolution)
                resolutions.append(resolution)
            self._apply(unit)
        return resolutions

    # -- reads a decision sees -----------------------------------------------------------------

    def _holder(self, memory: Memory, unit: _Unit) -> Memory | None:
        """The memory holding ``memory``'s content in its scope, this unit's writes first."""
        key = (memory.scope, memory.content_hash)
        for written in unit.written.values():
            if (written.scope, written.content_hash) == key:
                return written
        current = self._writer.holder(*key)
        if current is None or current.memory.id in unit.written:
            return None  # none, or one this unit rewrote with other content (a merge)
        unit.versions[current.memory.id] = current
        return current.memory

    def _neighbours(self, memory: Memory, limit: int, unit: _Unit) -> list[Neighbour]:
        """The ``limit`` nearest memories of the scope, in any state, by the store's vector leg (k-NN)."""
        if memory.embedding is None:
            return []
        found = {c.id: c.score for c in self._vector_search(memory.embedding, neighbour_filter(memory.scope), limit)}
        read = self._writer.read_many([i for i in found if i not in unit.written])
        unit.versions.update((v.memory.id, v) for v in read)
        return nearest(memory, found, {v.memory.id: v.memory for v in read}, unit.written, limit)

    # -- applying the plan ---------------------------------------------------------------------

    def _apply(self, unit: _Unit) -> None:
        writes = list(unit.written.values())
        docs = {m.id: memory_doc(m, self._dimension) for m in writes}  # every vector checked before a write
        unread = [m.id for m in writes if m.id not in unit.versions]
        unit.versions.update((v.memory.id, v) for v in self._writer.read_many(unread))
        moved = [m for m in writes if self._content_moved(m, unit.versions.get(m.id))]
        created = self._claim(moved)
        try:
            self._write(writes, docs, unit)
        except BaseException:
            for memory in created:
                self._writer.release(memory.scope, memory.content_hash, memory.id)
            raise
        for memory in moved:
            before = unit.versions.get(memory.id)
            if before is not None:  # a merge rewrote its content: the old content is free again
                self._writer.release(before.memory.scope, before.memory.content_hash, memory.id)

    @staticmethod
    def _content_moved(memory: Memory, before: Versioned | None) -> bool:
        """Whether ``memory`` needs a claim: new, or its (scope, content) differs from what is stored."""
        return before is None or (before.memory.scope, before.memory.content_hash) != (
            memory.scope,
            memory.content_hash,
        )

    def _claim(self, memories: Sequence[Memory]) -> list[Memory]:
        """Claim the content of each memory, in one ``_bulk`` when none is taken; the ones newly claimed.

        A claim found taken goes the careful way (:meth:`MemoryWriter.claim`): a stale one is taken
        over, one held by another live memory raises ``DuplicateMemoryError`` after releasing the rest.
        """
        if not memories:
            return []
        items = self._writer.create_claims(memories)
        created = [m for m, item in zip(memories, items, strict=True) if _status(item) < 300]
        try:
            for memory, item in zip(memories, items, strict=True):
                if _status(item) == 409 and self._writer.claim(memory):
                    created.append(memory)
        except BaseException:
            for memory in created:
                self._writer.release(memory.scope, memory.content_hash, memory.id)
            raise
        return created

    def _write(self, writes: Sequence[Memory], docs: dict[str, Json], unit: _Unit) -> None:
        """Every memory, relation and audit record of the unit in one ``_bulk`` that refreshes."""
        lines: list[Json] = []
        for memory in writes:
            lines += [self._memory_action(memory.id, unit.versions.get(memory.id)), docs[memory.id]]
        for relation in unit.relations:
            # create: a repeated edge is a no-op (409), as on SQLite.
            lines += [{"create": {"_index": self._names.relations, "_id": relation_id(relation)}}]
            lines.append(relation_doc(relation))
        lines += audit_lines(self._names.audit, unit.audit)
        items = self._cluster.bulk(lines, refresh="true")
        lost = [m for m, item in zip(writes, items, strict=False) if _status(item) == 409]
        for attempt in range(_MAX_ATTEMPTS):
            if not lost:
                return
            # Written by a lease-free writer since the decision read it: read again and carry its
            # access counters over. Time is spread so a busy counter does not win every round.
            time.sleep(min(0.1, 0.002 * (2 ** min(attempt, 6))) * random.random())
            fresh = {v.memory.id: v for v in self._writer.read_many([m.id for m in lost])}
            retry: list[Json] = []
            for memory in lost:
                merged = _with_accesses(memory, unit.versions.get(memory.id), fresh.get(memory.id))
                retry += [self._memory_action(memory.id, fresh.get(memory.id)), memory_doc(merged, self._dimension)]
            unit.versions.update(fresh)
            items = self._cluster.bulk(retry, refresh="true")
            lost = [m for m, item in zip(lost, items, strict=True) if _status(item) == 409]
        raise StoreUnavailableError(f"{len(lost)} memories of a planned write kept changing under it; try again")

    def _memory_action(self, memory_id: str, version: Versioned | None) -> Json:
        action: Json = {"_index": self._names.memories, "_id": memory_id}
        if version is None:
            return {"create": action}
        action["if_seq_no"] = version.seq_no
        action["if_primary_term"] = version.primary_term
        return {"index": action}
