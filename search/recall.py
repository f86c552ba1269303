"""The read path: candidates from each leg, fused once in the core, then rescored.

For every query (1–5): BM25 top-N and vector top-N over the scope set, filters inside the
store query, and with a second model (``HIVEMEM_SECOND_EMBED_MODEL``, a store that
:class:`~search.capabilities.KeepsSecondVectors`) that model's cosine over the candidates those legs brought;
the legs are fused by :mod:`hivemem.fusion`; several queries are fused again.
An optional rerank stage reorders the head of the fused list (:mod:`hivemem.rerank`; a cross-encoder
or a second model, in this process or on the rerank pool), against the first query; when it fails
or is late, the first-stage order stands and ``explain`` says so. Then each candidate's relevance is
moved by its decayed strength and scaled by trust (:mod:`hivemem.decay`) and by the time stage,
lifted toward the best of its thread on the shortlist (:mod:`hivemem.thread_context`), lowered when
superseded or consolidated (a superseded memory found with what replaced it never outranks it);
``min_relevance`` drops weak results and ``limit`` cuts the list.
Recall never writes: access reinforcement is the caller's background job. With a gate
(:mod:`hivemem.admission`), the first stage waits for a slot; the rerank stage runs outside it.

Two optional store capabilities (:mod:`search.capabilities`), used when a store has them:
:class:`SearchesLegsTogether` (every leg of every query in one round trip, e.g. OpenSearch
``_msearch``; fusion still happens here, so rankings agree with the SQLite store) and
:class:`FusesNatively` (an engine-side hybrid query whose pipeline does the same arithmetic,
enabled by the store's own configuration).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from hivemem.admission import FairGate, admitted
from hivemem.decay import rescore, strength, trust_factor
from hivemem.embedding import Embedder
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import RerankLateError
from hivemem.expansion import prf_vector
from hivemem.fusion import Candidate, Fused, minmax_fuse, rrf_fuse
from hivemem.model import FusionMethod, Hit, Memory, MemoryState, RelationType, RetrievalMode
from hivemem.observe import NO_OBSERVER, Observer
from hivemem.rerank import Reranked, Reranker, RerankOutcome, rerank_order, wanted
from hivemem.thread_context import context_leg, thread_lift
from hivemem.time_window import DatePattern, dates_in, question_date
from search.base import SearchFilter, Store
from search.capabilities import FusesNatively, KeepsSecondVectors, LegQuery, ScalesBM25, SearchesLegsTogether
from search.recall_params import RecallParams

__all__ = ["RecallParams", "Recaller", "leg_weights"]

log = logging.getLogger(__name__)

_BM25, _DENSE, _CONTEXT, _SECOND = "bm25", "dense", "context", "dense2"


_Vectors = Sequence[Sequence[float] | None] | Future[list[list[float]]]
"""Query vectors, or the promise of them from an embedder that computes them meanwhile."""


def _now(vectors: _Vectors) -> Sequence[Sequence[float] | None]:
    return vectors.result() if isinstance(vectors, Future) else vectors


def _query_vectors(embedder: Embedder, queries: Sequence[str]) -> _Vectors:
    """The query vectors of ``queries``: promised by a queued embedder (computed while the keyword
    legs run), computed now by any other."""
    if isinstance(embedder, QueuedEmbedder):
        return embedder.queries_later(list(queries))
    return list(embedder.embed_queries(list(queries)))


class _Rescored(NamedTuple):
    """A shortlisted memory after decay, trust and the time stage, before the thread lift."""

    fused: Fused
    memory: Memory
    alive: float
    trust: float
    timely: bool
    score: float


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


class _Evidence(NamedTuple):
    """What ``explain`` reports beside a hit's own factors: its legs, first-stage rank and rerank."""

    by_leg: Mapping[str, Fused]
    first_rank: Mapping[str, int]
    reranked: Mapping[str, Reranked]
    outcome: RerankOutcome
    named: DatePattern | None


def _explained(
    r: _Rescored,
    thread_best: float | None,
    *,
    superseded: bool,
    folded: bool,
    evidence: _Evidence,
    params: RecallParams,
) -> dict[str, float | int | str | None]:
    """Every stage's part in one hit's score (``explain: true``)."""
    f = r.fused
    first = evidence.by_leg.get(f.id)
    ranks, raw = (first.ranks, first.leg_scores) if first is not None else ({}, {})
    stage = evidence.reranked.get(f.id)
    return {
        "relevance": round(f.score, 6),
        "fused_rank": evidence.first_rank.get(f.id),
        "bm25_rank": ranks.get(_BM25),
        "bm25_score": _rounded(raw.get(_BM25)),
        "knn_rank": ranks.get(_DENSE),
        "knn_score": _rounded(raw.get(_DENSE)),
        "knn2_rank": ranks.get(_SECOND),
        "knn2_score": _rounded(raw.get(_SECOND)),
        "context_rank": ranks.get(_CONTEXT),
        "context_score": _rounded(raw.get(_CONTEXT)),
        "rerank": evidence.outcome.value,
        "rerank_rank": None if stage is None else stage.rerank_rank,
        "rerank_score": None if stage is None else _rounded(stage.rerank_score),
        "strength": round(r.alive, 6),
        "trust": r.trust,
        "superseded": params.superseded_factor if superseded else 1.0,
        "consolidated": params.consolidated_factor if folded else 1.0,
        "time": None if evidence.named is None else (1 + params.time_boost if r.timely else 1.0),
        "thread_best": _rounded(thread_best),
    }


def leg_weights(params: RecallParams, legs: Mapping[str, Sequence[Candidate]]) -> dict[str, float]:
    """The fusion weight of each leg (``bm25``, ``dense``): ``bm25_weight`` and its complement in
    hybrid mode, equal weights otherwise; a second model's leg (``dense2``) takes
    ``second_dense_weight`` of the vector weight from ``dense``; a ``context`` leg takes
    ``context_weight`` and the others share the rest in those proportions."""
    hybrid = params.retrieval_mode is RetrievalMode.HYBRID
    base = [leg for leg in legs if leg != _CONTEXT]
    weights = {
        leg: (params.bm25_weight if leg == _BM25 else 1.0 - params.bm25_weight) if hybrid else 1.0 for leg in base
    }
    if _SECOND in weights and _DENSE in weights:
        share = params.second_dense_weight
        weights[_SECOND] = weights[_DENSE] * share
        weights[_DENSE] *= 1.0 - share
    if sum(weights.values()) <= 0:
        # A weight of 0 on the only useful leg would fuse nothing; fall back to equal weights.
        weights = dict.fromkeys(base, 1.0)
    if _CONTEXT in legs:
        total = sum(weights.values())
        weights = {leg: w / total * (1.0 - params.context_weight) for leg, w in weights.items()}
        weights[_CONTEXT] = params.context_weight
    return weights


def exhausted_floors(legs: Mapping[str, Sequence[Candidate]], asked: int) -> dict[str, float]:
    """The min-max floor (:func:`hivemem.fusion.minmax_normalise`) of each first-stage leg that
    returned fewer candidates than ``asked``: it ran out of documents, so every other document
    scores at most 0 there (BM25 matched none of its words; a cosine of 0 shares nothing). In a
    small scope this keeps a relevant second memory from scoring 0.001 because it is the weakest
    of two."""
    return {leg: 0.0 for leg in (_BM25, _DENSE) if leg in legs and 0 < len(legs[leg]) < asked}


class Recaller:
    """Runs recall against one store with one embedder."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        params: RecallParams,
        reranker: Reranker | None = None,
        *,
        gate: FairGate | None = None,
        second: Embedder | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        # The second dense leg's model, where the store keeps its vectors (workers.second_model fills them).
        self._second = second if isinstance(store, KeepsSecondVectors) else None
        self.params = params
        self.reranker = reranker
        self.gate = gate  # searches admitted at once in this process (hivemem.admission); None: all
        self.observer: Observer = NO_OBSERVER  # a server's metrics (api.http.metrics)

    def _rerank(
        self, query: str, shortlist: list[Fused], memories: Mapping[str, Memory]
    ) -> tuple[list[Fused], dict[str, Reranked], RerankOutcome]:
        """The rerank stage over the head of ``shortlist``: the new order, each head candidate's
        rerank score and rank, and what the stage did. Never raises: a failed or late reranker
        leaves the first-stage order."""
        policy = self.params.rerank
        if self.reranker is None:
            return shortlist, {}, RerankOutcome.OFF
        present = [f for f in shortlist if f.id in memories]
        if not wanted(policy, [f.score for f in present]):
            return shortlist, {}, RerankOutcome.GATED
        head = present[: policy.top_n]
        try:
            scores = self.reranker.score(query, [memories[f.id].embedding_text() for f in head])
        except RerankLateError as exc:
            log.warning("rerank skipped: %s", exc)
            return shortlist, {}, RerankOutcome.LATE
        except Exception as exc:  # any failure of the stage costs the caller its order, not an answer
            log.warning("rerank skipped: %s", exc)
            return shortlist, {}, RerankOutcome.UNAVAILABLE
        reordered = rerank_order([(f.id, f.score) for f in present], scores, policy)
        by_id = {f.id: f for f in present}
        fused = [Fused(r.id, r.score, by_id[r.id].ranks, by_id[r.id].leg_scores) for r in reordered]
        return fused, {r.id: r for r in reordered if r.rerank_rank is not None}, RerankOutcome.APPLIED

    def _fuse(self, legs: Mapping[str, Sequence[Candidate]], weights: dict[str, float]) -> list[Fused]:
        if self.params.fusion is FusionMethod.RRF:
            fused = rrf_fuse(legs, weights, k=self.params.rrf_k)
            # Scale RRF into (0, 1] by its best possible score, so min_relevance means the same.
            ceiling = sum(weights[leg] for leg in legs) / (self.params.rrf_k + 1)
            return [Fused(f.id, f.score / ceiling, f.ranks, f.leg_scores) for f in fused]
        floors = exhausted_floors(legs, self.params.candidates_per_leg)
        # A BM25 leg that ran out of documents (a small scope) has too few candidates for min-max
        # to mean anything: its best match would score 1.0 whatever it matched. It is read on its
        # own scale instead (in Lucene's units, whatever the store); a full leg (a large scope)
        # keeps min-max, which measures best there.
        scale = self._store.bm25_scale if isinstance(self._store, ScalesBM25) else 1.0
        half = self.params.bm25_half_score * scale
        saturating = {_BM25: half} if half > 0 and _BM25 in floors else None
        return minmax_fuse(legs, weights, floors, saturating)

    def _weights(self, legs: Mapping[str, Sequence[Candidate]]) -> dict[str, float]:
        return leg_weights(self.params, legs)

    def _native(self, text: str, vector: Sequence[float] | None, where: SearchFilter) -> list[Fused] | None:
        if (
            self.params.retrieval_mode is not RetrievalMode.HYBRID
            or vector is None
            or not isinstance(self._store, FusesNatively)
        ):
            return None
        found = self._store.native_hybrid(
            text, vector, where, self.params.candidates_per_leg, fusion=self.params.fusion
        )
        if found is None:
            return None
        # The engine's RRF sums 1/(k + rank) over two equally weighted legs; scale it as _fuse does.
        scale = (self.params.rrf_k + 1) / 2 if self.params.fusion is FusionMethod.RRF else 1.0
        return [Fused(c.id, c.score * scale, {}) for c in found]

    def _legs(
        self, queries: Sequence[str], vectors: _Vectors, where: SearchFilter
    ) -> list[dict[str, Sequence[Candidate]]]:
        n = self.params.candidates_per_leg
        with_text = self.params.retrieval_mode in (RetrievalMode.HYBRID, RetrievalMode.BM25)
        if isinstance(self._store, SearchesLegsTogether):
            asked = [LegQuery(q if with_text else None, v) for q, v in zip(queries, _now(vectors), strict=True)]
            found = self._store.search_legs(asked, where, n)
            return [
                {leg: c for leg, c in ((_BM25, legs.keyword), (_DENSE, legs.vector)) if c is not None} for legs in found
            ]
        # The keyword legs first: they need no vector, so they run while the query is being embedded.
        per_query: list[dict[str, Sequence[Candidate]]] = [
            {_BM25: self._store.keyword_search(text, where, n)} if with_text else {} for text in queries
        ]
        for legs, vector in zip(per_query, _now(vectors), strict=True):
            if vector is not None:
                legs[_DENSE] = self._store.vector_search(vector, where, n)
        return per_query

    def _per_query(
        self, queries: Sequence[str], vectors: _Vectors, where: SearchFilter, second: _Vectors | None = None
    ) -> list[list[Fused]]:
        results: list[list[Fused] | None] = [None] * len(queries)
        if isinstance(self._store, FusesNatively):
            vectors = _now(vectors)  # native fusion needs the vectors first; nothing to overlap
            results = [self._native(q, v, where) for q, v in zip(queries, vectors, strict=True)]
        rest = [i for i, r in enumerate(results) if r is None]
        if rest:
            if len(rest) < len(queries):
                resolved = _now(vectors)
                vectors = [resolved[i] for i in rest]
            gathered = [self._with_context(legs) for legs in self._legs([queries[i] for i in rest], vectors, where)]
            second_vectors = self._resolved(second)
            if second_vectors is not None:
                gathered = self._with_second(gathered, [second_vectors[i] for i in rest])
            for i, legs in zip(rest, gathered, strict=True):
                results[i] = self._fuse(legs, self._weights(legs)) if legs else []
            if self.params.query_expansion == "prf":
                resolved = _now(vectors)
                for j, (i, legs) in enumerate(zip(rest, gathered, strict=True)):
                    results[i] = self._expanded(resolved[j], legs, results[i] or [], where)
        return [r or [] for r in results]

    def _with_context(self, legs: dict[str, Sequence[Candidate]]) -> dict[str, Sequence[Candidate]]:
        """``legs`` with the context leg (:mod:`hivemem.thread_context`) when a BM25 candidate has thread
        neighbours; unchanged otherwise, so memories in no thread are recalled as without it."""
        keyword = legs.get(_BM25)
        if not keyword or self.params.context_window < 1 or self.params.context_weight <= 0:
            return legs
        neighbours = self._store.thread_neighbours([c.id for c in keyword], self.params.context_window)
        if not any(neighbours.values()):
            return legs
        weight = self.params.context_neighbour_weight
        return {**legs, _CONTEXT: context_leg(keyword, neighbours, weight, self.params.candidates_per_leg)}

    def _with_second(
        self, gathered: list[dict[str, Sequence[Candidate]]], vectors: Sequence[Sequence[float] | None]
    ) -> list[dict[str, Sequence[Candidate]]]:
        """Each query's legs with the second model's (``dense2``): its cosine over every candidate the
        other legs brought that has a vector of it. A failure leaves the legs as they were."""
        if self._second is None or not isinstance(self._store, KeepsSecondVectors):
            return gathered
        model = self._second.model_id
        with_second = []
        for legs, vector in zip(gathered, vectors, strict=True):
            ids = list(dict.fromkeys(c.id for leg in legs.values() for c in leg))
            if vector is None or not ids:
                with_second.append(legs)
                continue
            try:
                found = self._store.second_vector_scores(model, vector, ids)
            except Exception as exc:  # the leg adds to recall; without it recall still answers
                log.warning("second dense leg skipped: %s", exc)
                found = []
            with_second.append({**legs, _SECOND: found} if found else legs)
        return with_second

    @staticmethod
    def _resolved(second: _Vectors | None) -> Sequence[Sequence[float] | None] | None:
        """The second model's query vectors once computed; None without them or when its model failed."""
        if second is None:
            return None
        try:
            return _now(second)
        except Exception as exc:  # the second leg adds to recall; without it recall still answers
            log.warning("second dense leg skipped: %s", exc)
            return None

    def _second_vectors(self, queries: Sequence[str]) -> _Vectors | None:
        """The second model's query vectors (being computed), or None without that leg or when its
        model fails (the other legs answer)."""
        if self._second is None or self.params.retrieval_mode not in (RetrievalMode.HYBRID, RetrievalMode.DENSE):
            return None
        try:
            return _query_vectors(self._second, queries)
        except Exception as exc:
            log.warning("second dense leg skipped: %s", exc)
            return None

    def _expanded(
        self,
        vector: Sequence[float] | None,
        legs: dict[str, Sequence[Candidate]],
        fused: list[Fused],
        where: SearchFilter,
    ) -> list[Fused]:
        """The fusion again, its vector leg searched with the query expanded by the first pass's best."""
        if vector is None or _DENSE not in legs or not fused:
            return fused
        best = self._store.get_many([f.id for f in fused[: self.params.prf_docs]])
        feedback = [m.embedding for m in best if m.embedding is not None]
        if not feedback:
            return fused
        expanded = prf_vector(vector, feedback, self.params.prf_weight)
        legs = {**legs, _DENSE: self._store.vector_search(expanded, where, self.params.candidates_per_leg)}
        return self._fuse(legs, self._weights(legs))

    def recall(
        self,
        queries: Sequence[str],
        where: SearchFilter,
        *,
        limit: int,
        now: datetime,
        min_relevance: float = 0.0,
    ) -> list[Hit]:
        """The best ``limit`` memories for ``queries`` inside ``where``, best first.

        The stages, in order: the legs of each query, fusion across queries, the shortlist (behind
        the gate); then rerank, rescoring (decay, trust, time), weighing (thread lift, superseded and
        consolidated factors, explain), and the order. A new stage is one method and one line here.
        """
        if not queries:
            return []
        clock = time.perf_counter()
        # The first stage runs behind the gate; the rerank stage, which may wait on a remote pool, does not.
        with admitted(self.gate):
            clock = self._lap("admission", clock)
            per_query = self._each_query(queries, where)
            fused = self._across_queries(per_query)
            clock = self._lap("legs", clock)
            shortlist, memories = self._shortlist(fused, limit)
            clock = self._lap("fetch", clock)
        first_rank = {f.id: rank for rank, f in enumerate(shortlist, start=1)}
        shortlist, reranked, outcome = self._rerank(queries[0], shortlist, memories)
        clock = self._lap("rerank", clock)
        self.observer.rerank(outcome.value)
        named = question_date(queries[0]) if self.params.time_boost > 0 else None
        rescored = self._rescored(shortlist, memories, named, now)
        # Per-leg ranks and scores exist for one query; several are fused again from their fusions.
        by_leg = {f.id: f for f in per_query[0]} if len(per_query) == 1 else {}
        evidence = _Evidence(by_leg, first_rank, reranked, outcome, named)
        hits = self._weighed(rescored, evidence, now, min_relevance)
        hits = self._below_their_replacements(hits, now)
        # At equal scores what is still valid comes first.
        hits.sort(key=lambda h: (-h.score, h.memory.superseded_at(now), h.memory.id))
        self._lap("score", clock)
        return hits[:limit]

    def _each_query(self, queries: Sequence[str], where: SearchFilter) -> list[list[Fused]]:
        """Each query's legs (BM25, vectors, context, a second model), fused per query."""
        vectors: _Vectors = [None] * len(queries)
        if self.params.retrieval_mode in (RetrievalMode.HYBRID, RetrievalMode.DENSE):
            vectors = _query_vectors(self._embedder, queries)
        return self._per_query(queries, vectors, where, self._second_vectors(queries))

    def _across_queries(self, per_query: list[list[Fused]]) -> list[Fused]:
        """Several queries' fused lists, fused again with equal weights; one query's as it is."""
        if len(per_query) == 1:
            return per_query[0]
        lists = {f"q{i}": [Candidate(f.id, f.score) for f in fl] for i, fl in enumerate(per_query)}
        return self._fuse(lists, dict.fromkeys(lists, 1.0))

    def _shortlist(self, fused: list[Fused], limit: int) -> tuple[list[Fused], dict[str, Memory]]:
        """The head of ``fused`` that the later stages read, and its memories (without vectors)."""
        # Rescoring can lift a candidate a few places, so look a little past the limit.
        shortlist = fused[: max(limit * 3, 30, self.params.rerank.top_n if self.reranker else 0)]
        return shortlist, {m.id: m for m in self._store.get_many([f.id for f in shortlist], vectors=False)}

    def _rescored(
        self, shortlist: list[Fused], memories: Mapping[str, Memory], named: DatePattern | None, now: datetime
    ) -> list[_Rescored]:
        """Each shortlisted memory's relevance moved by its decayed strength, scaled by trust, and
        lifted when the question names a date its text (or its creation day) fits."""
        p = self.params
        rescored: list[_Rescored] = []
        for f in shortlist:
            memory = memories.get(f.id)
            if memory is None:  # deleted between the legs and the fetch
                continue
            alive = strength(memory, now, base_half_life_days=p.decay_half_life_days, access_boost=p.access_boost)
            trust = trust_factor(memory.source, agent_inferred=p.trust_agent_inferred, imported=p.trust_imported)
            score = rescore(f.score, alive, trust, decay_weight=p.decay_weight)
            timely = named is not None and named.fits_any(dates_in(memory.content) or [memory.created_at.date()])
            if timely:
                score *= 1 + p.time_boost
            rescored.append(_Rescored(f, memory, alive, trust, timely, score))
        return rescored

    def _weighed(
        self, rescored: list[_Rescored], evidence: _Evidence, now: datetime, min_relevance: float
    ) -> list[Hit]:
        """The thread lift (:mod:`hivemem.thread_context`: toward the best of the memory's thread on
        the shortlist), then the factors of superseded and consolidated memories; what falls under
        ``min_relevance`` is dropped, the rest explained."""
        p = self.params
        lifted = thread_lift(
            {r.memory.id: r.score for r in rescored},
            {r.memory.id: (r.memory.scope, r.memory.thread) for r in rescored if r.memory.thread},
            p.thread_weight,
        )
        hits: list[Hit] = []
        for r in rescored:
            score, best = lifted.get(r.memory.id, (r.score, None))
            # Superseded (no longer valid): still found, ranked below what replaced it, however its thread scores.
            superseded = r.memory.superseded_at(now)
            if superseded:
                score *= p.superseded_factor
            # A consolidated source: its parent holds what it says, and is what recall should show.
            folded = r.memory.state is MemoryState.CONSOLIDATED
            if folded:
                score *= p.consolidated_factor
            if score >= min_relevance:
                explain = _explained(r, best, superseded=superseded, folded=folded, evidence=evidence, params=p)
                hits.append(Hit(memory=r.memory, score=score, explain=explain))
        return hits

    def _below_their_replacements(self, hits: list[Hit], now: datetime) -> list[Hit]:
        """A superseded memory found with what replaced it scores no higher than that: x0.1 alone
        cannot promise it, as min-max fusion gives the weakest candidate relevance 0 (a scope of
        two memories: the replacement at 0, the old one first). Read only for superseded hits."""
        superseded = {h.memory.id for h in hits if h.memory.superseded_at(now)}
        if not superseded:
            return hits
        scores = {h.memory.id: h.score for h in hits}
        replaced_by: dict[str, list[float]] = {}  # a superseded hit's id -> the scores of its replacements
        for edge in self._store.relations_of(sorted(superseded)):
            if edge.type is RelationType.SUPERSEDES and edge.target_id in superseded and edge.source_id in scores:
                replaced_by.setdefault(edge.target_id, []).append(scores[edge.source_id])
        capped = []
        for hit in hits:
            replacements = replaced_by.get(hit.memory.id)
            if replacements and hit.score > min(replacements):
                hit = replace(hit, score=min(replacements))
            capped.append(hit)
        return capped

    def _lap(self, stage: str, began: float) -> float:
        """Report ``stage`` as having run since ``began``; the time now, where the next one begins."""
        now = time.perf_counter()
        self.observer.recall_stage(stage, now - began)
        return now
