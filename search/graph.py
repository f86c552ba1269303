"""Graph neighbours of recall's hits: memories linked to what was found, one or two hops away.

Recall finds memories by their words and meaning; the graph adds what they are linked to (a
superseded predecessor, a ``similar`` note, the goal a finding ``achieves``). A neighbour scores
its hit's score times the edge's strength; only memories the search filter admits are returned,
so the graph never reaches past the caller's scopes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivemem.model import Hit, Memory, RelationType
from search.base import SearchFilter, Store

__all__ = ["GraphHit", "graph_neighbours"]


@dataclass(frozen=True, slots=True)
class GraphHit:
    """A memory reached through an edge: from which result, by which relation, how many edges
    away, and its score."""

    memory: Memory
    linked_from: str
    relation: RelationType
    score: float
    hops: int = 1


def _admitted(memory: Memory, where: SearchFilter) -> bool:
    return (
        memory.scope in where.scopes
        and memory.state in where.states
        and (not where.memory_types or memory.memory_type in where.memory_types)
        and (not where.tags or bool(set(memory.tags) & set(where.tags)))
    )


def _read_admitted(
    store: Store, step: dict[str, tuple[float, str, RelationType]], where: SearchFilter, wanted: int | None
) -> dict[str, Memory]:
    """The memories of ``step`` the filter admits. On the last hop only the ``wanted`` best count,
    so they are read best first, a few at a time, until that many are admitted: a result with its
    five ``similar`` links made recall read and build some fifty memories to keep three."""
    if wanted is None:
        return {m.id: m for m in store.get_many(list(step), vectors=False) if _admitted(m, where)}
    best_first = sorted(step, key=lambda i: (-step[i][0], i))
    admitted: dict[str, Memory] = {}
    batch = 2 * wanted
    for start in range(0, len(best_first), batch):
        chunk = best_first[start : start + batch]
        admitted |= {m.id: m for m in store.get_many(chunk, vectors=False) if _admitted(m, where)}
        if len(admitted) >= wanted:
            break
    return admitted


def graph_neighbours(
    store: Store, hits: Sequence[Hit], where: SearchFilter, *, limit: int = 3, hops: int = 1
) -> list[GraphHit]:
    """Up to ``limit`` memories within ``hops`` edges of ``hits`` (and not among them), best first."""
    if limit < 1 or hops < 1 or not hits:
        return []
    seen = {h.memory.id for h in hits}
    frontier = {h.memory.id: (h.score, h.memory.id) for h in hits}  # id -> (score, the result it came from)
    reached: dict[str, tuple[float, str, RelationType]] = {}
    distance: dict[str, int] = {}
    memories: dict[str, Memory] = {}
    for hop in range(1, hops + 1):
        step: dict[str, tuple[float, str, RelationType]] = {}
        for edge in store.relations_of(list(frontier)):  # one read a hop, not one a memory
            for memory_id in [end for end in (edge.source_id, edge.target_id) if end in frontier]:
                score, origin = frontier[memory_id]
                other = edge.other_end(memory_id)
                value = score * edge.strength
                if other in seen or (other in step and step[other][0] >= value):
                    continue
                step[other] = (value, origin, edge.type)
        admitted = _read_admitted(store, step, where, limit if hop == hops else None)
        memories |= admitted
        for memory_id, found in step.items():
            if memory_id in admitted and (memory_id not in reached or reached[memory_id][0] < found[0]):
                reached[memory_id] = found
                distance[memory_id] = hop
        seen |= set(step)
        frontier = {i: (step[i][0], step[i][1]) for i in admitted}
    ranked = sorted(reached.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
    return [
        GraphHit(memories[i], origin, relation, round(score, 6), distance[i]) for i, (score, origin, relation) in ranked
    ]
