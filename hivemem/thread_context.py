"""The context leg of recall: a memory scored with its neighbours in its thread.

A memory is often one turn of a conversation or one step of a task, and the words of a question
are often in the turn before or after the one that answers it ("What did the doctor say?" is
answered by the reply to "I saw the doctor today"). The context leg scores each memory by its own
BM25 score plus its thread neighbours', the nearest weighing most: ``weight`` for an adjacent
turn, halved with each step further. Own text counts fully, so a memory never loses to its
neighbours' words alone unless they are many and strong.

Computed from one lookup: the BM25 candidates' neighbours. A neighbour outside the candidates has
no BM25 score of its own, so its context score is what the candidates near it give it; being near
is symmetric, so those are exactly the candidates that list it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hivemem.fusion import Candidate

__all__ = ["context_leg"]


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
