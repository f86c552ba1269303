"""The read path: candidates from each leg, fused once in the core, then rescored.

For every query (1–5): BM25 top-N and vector top-N over the scope set, filters inside the
store query; the legs are fused by :mod:`hivemem.fusion`; several queries are fused again.
Then each candidate's relevance is moved by its decayed strength and scaled by trust
(:mod:`hivemem.decay`), ``min_relevance`` drops weak results and ``limit`` cuts the list.
Recall never writes: access reinforcement is the caller's background job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from hivemem.config import Settings
from hivemem.decay import rescore, strength, trust_factor
from hivemem.embedding import Embedder
from hivemem.fusion import Candidate, Fused, minmax_fuse, rrf_fuse
from hivemem.model import FusionMethod, Hit, RetrievalMode
from search.base import SearchFilter, Store

__all__ = ["RecallParams", "Recaller"]

_BM25, _DENSE = "bm25", "dense"


@dataclass(frozen=True, slots=True)
class RecallParams:
    """The tunable arithmetic of recall; :meth:`from_settings` fills it from :class:`Settings`."""

    fusion: FusionMethod = FusionMethod.MINMAX
    bm25_weight: float = 0.5
    rrf_k: int = 60
    candidates_per_leg: int = 100
    mode: RetrievalMode = RetrievalMode.HYBRID
    decay_half_life_days: float = 90.0
    decay_weight: float = 0.3
    access_boost: float = 0.1
    trust_agent_inferred: float = 0.9
    trust_imported: float = 0.95

    @classmethod
    def from_settings(cls, settings: Settings, mode: RetrievalMode = RetrievalMode.HYBRID) -> RecallParams:
        """Recall parameters as configured."""
        return cls(
            fusion=settings.fusion,
            bm25_weight=settings.bm25_weight,
            rrf_k=settings.rrf_k,
            candidates_per_leg=settings.candidates_per_leg,
            mode=mode,
            decay_half_life_days=settings.decay_half_life_days,
            decay_weight=settings.decay_weight,
            access_boost=settings.access_boost,
            trust_agent_inferred=settings.trust_agent_inferred,
            trust_imported=settings.trust_imported,
        )


class Recaller:
    """Runs recall against one store with one embedder."""

    def __init__(self, store: Store, embedder: Embedder, params: RecallParams) -> None:
        self._store = store
        self._embedder = embedder
        self.params = params

    def _fuse(self, legs: Mapping[str, Sequence[Candidate]], weights: dict[str, float]) -> list[Fused]:
        if self.params.fusion is FusionMethod.RRF:
            fused = rrf_fuse(legs, weights, k=self.params.rrf_k)
            # Scale RRF into (0, 1] by its best possible score, so min_relevance means the same.
            ceiling = sum(weights[leg] for leg in legs) / (self.params.rrf_k + 1)
            return [Fused(f.id, f.score / ceiling, f.ranks) for f in fused]
        return minmax_fuse(legs, weights)

    def _one_query(self, text: str, vector: Sequence[float] | None, where: SearchFilter) -> list[Fused]:
        n = self.params.candidates_per_leg
        legs: dict[str, Sequence[Candidate]] = {}
        weights: dict[str, float] = {}
        if self.params.mode in (RetrievalMode.HYBRID, RetrievalMode.BM25):
            legs[_BM25] = self._store.keyword_search(text, where, n)
            weights[_BM25] = self.params.bm25_weight if self.params.mode is RetrievalMode.HYBRID else 1.0
        if vector is not None:
            legs[_DENSE] = self._store.vector_search(vector, where, n)
            weights[_DENSE] = 1.0 - self.params.bm25_weight if self.params.mode is RetrievalMode.HYBRID else 1.0
        if sum(weights.values()) <= 0:
            # A weight of 0 on the only useful leg would fuse nothing; fall back to equal weights.
            weights = dict.fromkeys(legs, 1.0)
        return self._fuse(legs, weights)

    def recall(
        self,
        queries: Sequence[str],
        where: SearchFilter,
        *,
        limit: int,
        now: datetime,
        min_relevance: float = 0.0,
    ) -> list[Hit]:
        """The best ``limit`` memories for ``queries`` inside ``where``, best first."""
        if not queries:
            return []
        vectors: list[Sequence[float] | None] = [None] * len(queries)
        if self.params.mode in (RetrievalMode.HYBRID, RetrievalMode.DENSE):
            vectors = list(self._embedder.embed_queries(list(queries)))
        per_query = [self._one_query(q, v, where) for q, v in zip(queries, vectors, strict=True)]
        if len(per_query) == 1:
            fused = per_query[0]
        else:
            lists = {f"q{i}": [Candidate(f.id, f.score) for f in fl] for i, fl in enumerate(per_query)}
            fused = self._fuse(lists, dict.fromkeys(lists, 1.0))
        # Rescoring can lift a candidate a few places, so look a little past the limit.
        shortlist = fused[: max(limit * 3, 30)]
        memories = {m.id: m for m in self._store.get_many([f.id for f in shortlist])}
        leg_ranks = {f.id: f.ranks for f in per_query[0]} if len(per_query) == 1 else {}
        hits: list[Hit] = []
        p = self.params
        for f in shortlist:
            memory = memories.get(f.id)
            if memory is None:  # deleted between the legs and the fetch
                continue
            alive = strength(memory, now, base_half_life_days=p.decay_half_life_days, access_boost=p.access_boost)
            trust = trust_factor(memory.source, agent_inferred=p.trust_agent_inferred, imported=p.trust_imported)
            score = rescore(f.score, alive, trust, decay_weight=p.decay_weight)
            if score < min_relevance:
                continue
            ranks = leg_ranks.get(f.id, {})
            explain: dict[str, float | int | None] = {
                "relevance": round(f.score, 6),
                "bm25_rank": ranks.get(_BM25),
                "knn_rank": ranks.get(_DENSE),
                "strength": round(alive, 6),
                "trust": trust,
            }
            hits.append(Hit(memory=memory, score=score, explain=explain))
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        return hits[:limit]
