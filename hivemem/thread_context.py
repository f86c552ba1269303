"""Thread context in recall: the context leg (a memory scored with its neighbours in its thread),
and the thread lift (a memory scored with the best of its thread on the shortlist).

A memory is often one turn of a conversation or one step of a task, and the words of a question
are often in the turn before or after the one that answers it ("What did the doctor say?" is
answered by the reply to "I saw the doctor today"). The context leg scores each memory by its own
BM25 score plus its thread neighbours', the nearest weighing most: ``weight`` for an adjacent
turn, halved with each step further. Own text counts fully, so a memory never loses to its
neighbours' words alone unless they are many and strong.

Computed from one lookup: the BM25 candidates' neighbours. A neighbour outside the candidates has
no BM25 score of its own, so its context score is what the candidates near it give it; being near
is symmetric, so those are exactly the candidates that list it.

The thread lift works at the level of the whole thread, after rescoring: a question is usually
about one conversation, and the turn that holds its words is often not the one that answers it
(the answer comes a few turns later, or in another part of the talk). Each memory's score moves toward
the best score among its thread-mates on the shortlist, ``(own + weight × best) / (1 + weight)``,
as passage retrieval lifts a passage by the best passage of its document. The best memory of a
thread keeps its score, so the first result never changes, and a memory in no thread is its own
best: recalled exactly as without the lift.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from hivemem.fusion import Candidate

__all__ = ["context_leg", "thread_lift"]


def context_leg(
    keyword: Sequence[Candidate], neighbours: Mapping[str, Sequence[tuple[str, int]]], weight: float, limit: int
) -> list[Candidate]:
    """The best ``limit`` memories by own score plus their neighbours' (see the module), best first."""
    scores = {c.id: c.score for c in keyword}
    context = dict(scores)
    for candidate, near in neighbours.items():
        own = scores.get(candidate, 0.0)
        for other, distance in near:
            context[other] = context.get(other, 0.0) + weight * 0.5 ** (distance - 1) * own
    ranked = sorted(context.items(), key=lambda item: (-item[1], item[0]))
    return [Candidate(i, s) for i, s in ranked[:limit] if s > 0]


def thread_lift(
    scores: Mapping[str, float], threads: Mapping[str, Hashable], weight: float
) -> dict[str, tuple[float, float]]:
    """For each id of ``threads`` (id -> its thread's key; ids in no thread left out): its score
    lifted toward the best of ``scores`` among the ids of the same thread, and that best.
    ``(own + weight × best) / (1 + weight)``; empty when ``weight`` is 0 (the lift is off)."""
    if weight <= 0:
        return {}
    best: dict[Hashable, float] = {}
    for memory_id, thread in threads.items():
        best[thread] = max(best.get(thread, scores[memory_id]), scores[memory_id])
    return {
        memory_id: ((scores[memory_id] + weight * best[thread]) / (1 + weight), best[thread])
        for memory_id, thread in threads.items()
    }
