"""Where an embedding model's cosines mean the same fact, the same subject, a related memory.

Models spread cosines differently. Over pairs of one scope's facts (the resolution dev sets), two
unrelated notes score 0.09 at the median under all-MiniLM-L6-v2, 0.50 under bge-small-en-v1.5 and
0.82 under e5-small-v2: a cosine of 0.60 is "the same subject" for the first and noise for the
third. So write-time resolution and sleep read each model's cosines against that model's bands.

The bands of a model were first set where the same share of those pairs lies below them as below
MiniLM's (its 0.40, 0.60 and 0.85 mapped by quantile, ``hivemem bench cosine-bands``), then the
same-subject band was lowered to where the dev contradictions are all caught, and checked with
``hivemem bench resolution`` on the look-alike sets (bench/RESULTS.md, "Cosine bands per model").
The query band maps MiniLM's 0.35 the same way over the small-store set's questions and every
memory they do not ask for (bge 0.63, e5 0.80: 6.4 % of those pass, and 92 % of the answers, as
with MiniLM). A model not listed (a local folder, a hub id, the test suite's hash embedder) reads MiniLM's:
measure its bands with the bench before trusting resolution with it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MINILM_BANDS", "CosineBands", "bands_for", "is_measured"]


@dataclass(frozen=True, slots=True)
class CosineBands:
    """A model's cosines at which two memories say the same fact (``same_fact``: reinforce; sleep
    clusters), speak of one subject (``same_subject``: the contradiction check decides), are
    related (``related``: linked ``similar``), or are near enough for a write that names a change
    to take back the neighbour stating its old side (``named_change``); and the cosine of a query
    (embedded as a query) to a memory from which the memory bears on it (``query_related``: the
    prompt hook injects it)."""

    same_fact: float
    same_subject: float
    related: float
    named_change: float
    query_related: float

    def __post_init__(self) -> None:
        if not 0.0 <= max(self.related, self.named_change) <= self.same_subject <= self.same_fact <= 1.0:
            raise ValueError("need 0 <= related, named_change <= same_subject <= same_fact <= 1")


# The bands the resolution rules were written and measured with (Engram's thresholds).
MINILM_BANDS = CosineBands(same_fact=0.85, same_subject=0.60, related=0.40, named_change=0.40, query_related=0.35)

_BY_MODEL: dict[str, CosineBands] = {
    "sentence-transformers/all-MiniLM-L6-v2": MINILM_BANDS,
    # Measured on MiniLM's scale: mapped 0.885 / 0.612 / 0.42, its query floor 0.37.
    "sentence-transformers/all-mpnet-base-v2": MINILM_BANDS,
    "BAAI/bge-small-en-v1.5": CosineBands(
        same_fact=0.87, same_subject=0.70, related=0.68, named_change=0.68, query_related=0.63
    ),
    "intfloat/e5-small-v2": CosineBands(
        same_fact=0.96, same_subject=0.86, related=0.86, named_change=0.83, query_related=0.80
    ),
}


def bands_for(model_id: str) -> CosineBands:
    """The bands of the model ``model_id`` (its 8-bit copy has the same id); MiniLM's for one not measured."""
    return _BY_MODEL.get(model_id, MINILM_BANDS)


def is_measured(model_id: str) -> bool:
    """Whether ``model_id`` has bands of its own here (else :func:`bands_for` gives MiniLM's)."""
    return model_id in _BY_MODEL
