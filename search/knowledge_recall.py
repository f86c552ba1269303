"""Knowledge search: BM25 and vector legs over chunks, fused in the core as memories are.

The same arithmetic as :mod:`search.recall` (min-max or RRF, ``bm25_weight``, candidates per leg),
without what only memories have (decay, trust): a chunk is as true as the document it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from hivemem.admission import FairGate, admitted
from hivemem.embedding import Embedder
from hivemem.fusion import minmax_fuse, rrf_fuse
from hivemem.knowledge import KnowledgeChunk
from hivemem.model import FusionMethod, RetrievalMode
from search.base import ChunkFilter, Store
from search.recall import RecallParams, exhausted_floors, leg_weights

__all__ = ["ChunkHit", "KnowledgeSearcher"]


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """A found chunk and its fused score (higher is better)."""

    chunk: KnowledgeChunk
    score: float


class KnowledgeSearcher:
    """Searches one store's chunks with one embedder."""

    def __init__(self, store: Store, embedder: Embedder, params: RecallParams, *, gate: FairGate | None = None) -> None:
        self._store = store
        self._embedder = embedder
        self.params = params
        self.gate = gate  # shared with memory recall: searches admitted at once (hivemem.admission)

    def search(self, query: str, where: ChunkFilter, limit: int) -> list[ChunkHit]:
        """The best ``limit`` chunks for ``query`` passing ``where``, best first."""
        with admitted(self.gate):
            return self._search(query, where, limit)

    def _search(self, query: str, where: ChunkFilter, limit: int) -> list[ChunkHit]:
        params = self.params
        legs = {}
        n = max(params.candidates_per_leg, limit)
        if params.retrieval_mode is not RetrievalMode.DENSE:
            legs["bm25"] = self._store.chunk_keyword_search(query, where, n)
        if params.retrieval_mode is not RetrievalMode.BM25:
            vector = self._embedder.embed_queries([query])[0]
            legs["dense"] = self._store.chunk_vector_search(vector, where, n)
        weights = leg_weights(params, legs)
        fused = (
            rrf_fuse(legs, weights, params.rrf_k)
            if params.fusion is FusionMethod.RRF
            else minmax_fuse(legs, weights, exhausted_floors(legs, n))
        )[:limit]
        chunks = {chunk.id: chunk for chunk in self._store.get_chunks([f.id for f in fused])}
        return [ChunkHit(chunks[f.id], f.score) for f in fused if f.id in chunks]
