"""The tuning of recall: fusion, the context and thread stages, query expansion, the time stage,
rerank, decay, trust and the factors of superseded and consolidated memories.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hivemem.model import FusionMethod, RetrievalMode
from hivemem.rerank import RerankGate, RerankPolicy
from hivemem.tuning import Tuning

__all__ = ["RecallParams"]


class RecallParams(Tuning):
    """The tunable arithmetic of recall."""

    group_title: ClassVar[str] = "Recall"

    retrieval_mode: RetrievalMode = Field(
        default=RetrievalMode.HYBRID,
        description="Which legs recall runs: `hybrid` (BM25 and vectors), `bm25` or `dense` (benchmarks and "
        "diagnostics).",
    )
    fusion: FusionMethod = Field(
        default=FusionMethod.MINMAX,
        description="How the BM25 and vector legs are fused: `minmax` (normalise, weighted sum) or `rrf`.",
    )
    bm25_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the BM25 leg in min-max fusion; vectors get 1 - w.",
    )
    bm25_half_score: float = Field(
        default=5.5,
        ge=0.0,
        description="In min-max fusion, a BM25 leg that ran out of documents (a small scope) is read on its own "
        "scale, s / (s + h), not min-max over its few candidates: h is the BM25 score worth half, in Lucene's "
        "units (SQLite's FTS5 and OpenSearch 2.x score 2.2 times them; the stores rescale it). 0: min-max always.",
    )
    rrf_k: int = Field(default=60, ge=1, description="Rank constant of reciprocal-rank fusion.")
    candidates_per_leg: int = Field(
        default=100, ge=1, le=1000, description="Candidates each leg (BM25, vector) brings to fusion."
    )
    second_dense_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="The second model's share of the vector legs' fusion weight (`1 - HIVEMEM_BM25_WEIGHT`); the "
        "first model keeps the rest.",
    )
    context_window: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Neighbours on each side of a memory in its thread that the context leg reads with it; 0 turns "
        "the leg off. Memories in no thread are recalled as without it.",
    )
    # 0.2 of a sweep over 0.1-0.3 on LoCoMo dev: the best hit@5 (0.759) with hit@1, hit@10 and MRR
    # at or above 0.25's; only threaded memories are touched (bench/RESULTS.md, "Small stores").
    context_weight: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="Fusion weight of the context leg when a candidate has thread neighbours; the other legs share "
        "the rest as `HIVEMEM_BM25_WEIGHT` splits it.",
    )
    context_neighbour_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=10.0,
        description="In the context leg, the share of an adjacent turn's BM25 score a memory gets (halved per step).",
    )
    thread_weight: float = Field(
        default=0.4,
        ge=0.0,
        le=5.0,
        description="How much the best score among a memory's thread-mates on the shortlist counts in its own: "
        "(own + w × best) / (1 + w), lifting the other turns of the conversation a question matches best. The best "
        "result keeps its score, and so does every memory in no thread. 0: off.",
    )
    query_expansion: Literal["off", "prf"] = Field(
        default="off",
        description="`prf`: pseudo-relevance feedback on the vector leg (the query vector plus the centroid of "
        "the first pass's best `HIVEMEM_PRF_DOCS`, searched again); `off`: one pass.",
    )
    prf_docs: int = Field(default=3, ge=1, le=20, description="First-pass hits whose centroid expands the query.")
    prf_weight: float = Field(
        default=0.5, ge=0.0, le=2.0, description="Weight of that centroid next to the query vector (Rocchio's beta)."
    )
    time_boost: float = Field(
        default=0.25,
        ge=0.0,
        le=5.0,
        description="When a question names a date (a day, a month, a year), multiply the score of a memory whose "
        "date fits by 1 + this (its dates: those written in its text, else its creation day). 0: off.",
    )
    rerank_gate: RerankGate = Field(
        default=RerankGate.ALWAYS,
        description="When a configured reranker runs: `always`, `never`, or `margin` (only when the first "
        "stage's best two candidates are within `HIVEMEM_RERANK_MARGIN`).",
    )
    rerank_top_n: int = Field(default=30, ge=2, le=200, description="First-stage candidates the reranker reads.")
    rerank_margin: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="The `margin` gate: rerank when the best two fused scores differ by less.",
    )
    rerank_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the reranker's (min-max normalised) score in the reranked order; the rest is the "
        "first stage's.",
    )
    decay_half_life_days: float = Field(
        default=90.0, gt=0, description="Base half-life of a memory's strength; scaled per memory type."
    )
    decay_weight: float = Field(
        default=0.3, ge=0.0, le=1.0, description="How much decayed strength moves the final score (0 = none)."
    )
    access_boost: float = Field(
        default=0.1,
        ge=0.0,
        description="Strength gained per ln(1 + uses): memories read by id, cited or repeated fade slower "
        "(recalls do not count).",
    )
    trust_agent_inferred: float = Field(
        default=0.9, ge=0.0, le=1.0, description="Score factor for `agent_inferred` memories."
    )
    trust_imported: float = Field(default=0.95, ge=0.0, le=1.0, description="Score factor for `imported` memories.")
    superseded_factor: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Recall score factor of a memory that is no longer valid (superseded: `valid_to` passed).",
    )
    consolidated_factor: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Recall score factor of a consolidated source: found, ranked below the memory that holds it.",
    )
    default_limit: int = Field(default=10, ge=1, le=100, description="Results recall returns when not told.")

    @property
    def rerank(self) -> RerankPolicy:
        """When and how much the rerank stage reorders."""
        return RerankPolicy(
            gate=self.rerank_gate, top_n=self.rerank_top_n, margin=self.rerank_margin, weight=self.rerank_weight
        )
