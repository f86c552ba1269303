"""One scope's vectors: float16 codes in faiss, scanned whole when few, clustered (IVF) when many.

Why this design (measured on 2 cores, 384-d all-MiniLM vectors: 20,000 SciFact sentences and
noisy near-copies of them, as ``hivemem bench scale`` builds; figures in bench/RESULTS.md):

- float16 codes, not float32: half the memory (768 MB at 1M vectors, where float32 took 1.5 GB of a
  3.2 GB process), and faiss scans them in C with F16C: 0.65 ms a query over 10k rows, where numpy
  has no float16 kernel (converting first cost 24 ms). Every candidate is then scored again from
  the float32 vector in the file (:meth:`search.sqlite.memory_index.MemoryIndex.vector_search`),
  so scores are exact.
- Below ``min_rows`` a scan is exact and cheap. Above it a query's scan grows with the scope (5 ms
  at 50k, ~60 ms at 1M), so the codes are split into ``4·sqrt(n)`` clusters by k-means
  (``faiss.IndexIVFScalarQuantizer``) and a query reads the clusters nearest to it, at least
  ``probe_rows`` rows and ``probe_share`` of the scope: recall@10 against exact search 0.998 at
  100k (1,264 clusters, 160 read, 0.8 ms) and 1.0 at 1M (4,096 clusters, 128 read, 2.3 ms).
- An HNSW graph (faiss ``IndexHNSWSQ``) was measured and dropped: the bench's clusters of near-copies
  crowd its neighbour lists, so at 1M recall@10 stopped at 0.987 (M 32, efSearch 3,000) and 0.989
  (M 48, efConstruction 400, efSearch 2,000, 4.7 ms), after builds of 190 and 468 s; the clustered
  index builds in ~25 s (training on a sample, 10 iterations) and needs no saving between starts.
- Filters are applied inside the search: the caller's mask of passing rows becomes a bitmap over
  labels (``faiss.IDSelectorBitmap``) that the scan and the cluster reads both consult. Clusters
  filtered down to a share of their rows hold fewer matches, so a filter that passes few rows (at
  most ``min_rows``, or under a tenth of the scope) is answered by reading every cluster, an exact
  scan, and otherwise more clusters are read as the share passing falls.
- Labels are positions, in order of addition. A removed or rewritten row's label is marked dead
  (the bitmap leaves it out); the set is rebuilt, its labels renumbered, once dead labels outnumber
  the live ones, and its clusters are trained again each time the scope has grown fourfold.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from search.sqlite.tuning import SQLiteTuning

__all__ = ["VectorSet"]

log = logging.getLogger(__name__)

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_INITIAL_LABELS = 256
_CHUNK = 20_000
_SCAN_SHARE = 0.1  # a filter passing less than this share of a clustered scope is answered by a scan
_TRAIN_POINTS = 40  # per cluster (faiss warns under 39)
_TRAIN_ITERATIONS = 10
_REGROW = 4  # clusters are trained again when the scope has grown this many times
_RESERVE_MARGIN = 1.2


def clusters_for(rows: int) -> int:
    """How many clusters ``rows`` vectors are split into: 4·sqrt(n), and enough points to train each."""
    return max(1, min(round(4 * math.sqrt(rows)), rows // _TRAIN_POINTS))


def training_rows(rows: int) -> int:
    """How many vectors of a scope of ``rows`` to train its clusters on."""
    return min(rows, clusters_for(rows) * _TRAIN_POINTS)


_faiss_lock = threading.Lock()
_faiss_module: Any = None


def _faiss() -> Any:
    """faiss, imported once, its OpenMP pool held to one thread outside :func:`_all_cores`.

    OpenMP threads spin after each parallel region and took the cores from the model's threads
    (as OpenBLAS's did, :mod:`search.sqlite.memory_index`); a search is one thread.
    """
    global _faiss_module
    with _faiss_lock:
        if _faiss_module is None:
            import faiss

            faiss.omp_set_num_threads(1)
            _faiss_module = faiss
        return _faiss_module


@contextmanager
def _all_cores() -> Iterator[None]:
    """Every core for training and filling clusters (the work that parallelises well)."""
    faiss = _faiss()
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(1)


def _reserve(index: Any, sample: F32, rows: int) -> None:
    """Give each cluster of ``index`` room for the rows ``sample`` says it will get, before they arrive.

    A cluster's codes grow by doubling as rows are added a few thousand at a time, which left ~40 %
    of them unused (~300 MB at 1M rows); sized from the sample's shares, with a margin for the
    sample's error, they hold ~20 % spare.
    """
    if len(sample) == 0:
        return
    _, nearest = index.quantizer.search(np.ascontiguousarray(sample, dtype=np.float32), 1)
    shares = np.bincount(nearest[:, 0], minlength=index.nlist) / len(sample)
    lists = index.invlists
    for cluster, room in enumerate((shares * rows * _RESERVE_MARGIN).astype(np.int64).tolist()):
        if room:
            lists.resize(cluster, room)  # a vector's capacity stays when it is emptied again
            lists.resize(cluster, 0)


class VectorSet:
    """The vectors of one scope's rows, each under a label, with the slot of its row. Not thread-safe:
    the owning index serialises access."""

    def __init__(self, dimension: int, params: SQLiteTuning) -> None:
        self._dimension = dimension
        self._params = params
        self._index = self._flat()
        self._trained_for = 0  # rows the clusters were trained for; 0 while the set is flat
        self._slot_of = np.full(_INITIAL_LABELS, -1, dtype=np.int64)  # by label; -1: dead
        self.live = 0

    # -- building ------------------------------------------------------------------------------

    def _flat(self) -> Any:
        faiss = _faiss()
        return faiss.IndexScalarQuantizer(self._dimension, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)

    def _clustered(self, sample: F32, rows: int) -> Any:
        """An empty clustered index for a scope of about ``rows``, trained on ``sample``."""
        faiss = _faiss()
        clusters = clusters_for(rows)
        quantizer = faiss.IndexFlatIP(self._dimension)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, self._dimension, clusters, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT, False
        )
        index.cp.niter = _TRAIN_ITERATIONS
        index.cp.max_points_per_centroid = _TRAIN_POINTS
        index.cp.verbose = False
        index.cp.spherical = True  # unit vectors and inner product: centroids kept on the sphere
        with _all_cores():
            index.train(np.ascontiguousarray(sample, dtype=np.float32))
        # Labels are positions: an array maps each to its cluster and offset, for reading codes back.
        index.set_direct_map_type(faiss.DirectMap.Array)
        return index

    @property
    def total(self) -> int:
        """Labels handed out, dead ones included."""
        return int(self._index.ntotal)

    @property
    def clustered(self) -> bool:
        """Whether the vectors are clustered (else a flat index, scanned whole)."""
        return self._trained_for > 0

    def start_clustered(self, sample: F32, rows: int) -> None:
        """Cluster an empty set for a scope about to be filled with ``rows`` vectors (a load), trained
        on ``sample``, a uniform sample of them (:func:`training_rows` is enough)."""
        if self.total:
            raise ValueError("only an empty set starts clustered")
        self._index = self._clustered(sample, rows)
        self._trained_for = rows
        _reserve(self._index, sample, rows)

    def _decoded(self, labels: I64) -> F32:
        """The stored vectors of ``labels``, as float32."""
        if not self.clustered:
            faiss = _faiss()
            raw = faiss.rev_swig_ptr(self._index.codes.data(), self.total * self._dimension * 2)
            codes = np.asarray(raw).view(np.float16).reshape(self.total, self._dimension)
            return codes[labels].astype(np.float32)
        if len(labels) == 0:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.asarray(self._index.reconstruct_batch(labels), dtype=np.float32)

    def add(self, vectors: F32, slots: I64) -> I64:
        """Store ``vectors`` (unit length) for the rows in ``slots``; their labels. Call
        :meth:`maintain` after a run of changes."""
        first = self.total
        need = first + len(vectors)
        if need > len(self._slot_of):
            grown = np.full(max(need, len(self._slot_of) * 3 // 2), -1, dtype=np.int64)
            grown[: len(self._slot_of)] = self._slot_of
            self._slot_of = grown
        for start in range(0, len(vectors), _CHUNK):
            self._index.add(np.ascontiguousarray(vectors[start : start + _CHUNK], dtype=np.float32))
        self._slot_of[first:need] = slots
        self.live += len(vectors)
        return np.arange(first, need, dtype=np.int64)

    def holds(self, label: int, vector: F32) -> bool:
        """Whether ``label`` stores ``vector`` (as float16): a rewrite with the same vector keeps its label."""
        stored = self._decoded(np.asarray([label], dtype=np.int64))[0]
        return bool(np.array_equal(stored, vector.astype(np.float16).astype(np.float32)))

    def kill(self, label: int) -> None:
        """Drop ``label`` from every later search."""
        if self._slot_of[label] >= 0:
            self._slot_of[label] = -1
            self.live -= 1

    def move(self, label: int, slot: int) -> None:
        """The row of ``label`` now lives in ``slot``."""
        self._slot_of[label] = slot

    def maintain(self) -> I64 | None:
        """Cluster a set grown past ``min_rows``, train its clusters again when it has grown fourfold,
        and drop dead labels once they outnumber the live ones; when that rebuilt the set, the new
        label of each old label (-1 for the dead), so the owner can relabel its rows."""
        dead = self.total - self.live
        grown = self.live >= self._params.vector_cluster_min_rows and (
            not self.clustered or self.live >= _REGROW * self._trained_for
        )
        if grown or (dead >= 1_024 and dead > self.live):
            return self._rebuild()
        return None

    def _rebuild(self) -> I64:
        began = time.perf_counter()
        keep = np.flatnonzero(self._slot_of[: self.total] >= 0)
        if len(keep) >= self._params.vector_cluster_min_rows:
            sample = np.sort(np.random.default_rng(len(keep)).choice(keep, training_rows(len(keep)), replace=False))
            vectors = self._decoded(sample)
            index = self._clustered(vectors, len(keep))
            _reserve(index, vectors, len(keep))
            trained_for = len(keep)
        else:
            index, trained_for = self._flat(), 0
        with _all_cores():
            for start in range(0, len(keep), _CHUNK):
                index.add(self._decoded(keep[start : start + _CHUNK]))
        relabel = np.full(self.total, -1, dtype=np.int64)
        relabel[keep] = np.arange(len(keep), dtype=np.int64)
        slot_of = np.full(max(len(keep), _INITIAL_LABELS), -1, dtype=np.int64)
        slot_of[: len(keep)] = self._slot_of[keep]
        self._index, self._trained_for, self._slot_of, self.live = index, trained_for, slot_of, len(keep)
        log.info(
            "vectors of a scope rebuilt: %d live, %s, %.1f s", len(keep), self._shape(), time.perf_counter() - began
        )
        return relabel

    def _shape(self) -> str:
        return f"{self._index.nlist} clusters" if self.clustered else "flat"

    # -- searching -----------------------------------------------------------------------------

    def passing(self, slots_passing: Mask | None) -> tuple[npt.NDArray[np.uint8] | None, int]:
        """The bitmap over labels of live rows whose slot passes (None: every label passes), and
        how many pass. Cache it while the set and the filter are unchanged."""
        n = self.total
        slot_of = self._slot_of[:n]
        if slots_passing is None and self.live == n:
            return None, n
        alive = slot_of >= 0
        ok = alive if slots_passing is None else alive & slots_passing[np.where(alive, slot_of, 0)]
        return np.packbits(ok, bitorder="little"), int(np.count_nonzero(ok))

    def search(self, queries: F32, bitmap: npt.NDArray[np.uint8] | None, passing: int, k: int) -> list[tuple[I64, F32]]:
        """Per query, the slots and float16 scores of the (about) ``k`` best labels the bitmap admits."""
        k = min(k, passing)
        if k < 1:
            return [(np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in queries]
        faiss = _faiss()
        selector = None if bitmap is None else faiss.IDSelectorBitmap(self.total, faiss.swig_ptr(bitmap))
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if not self.clustered:
            params = faiss.SearchParameters(sel=selector)
        else:
            params = faiss.SearchParametersIVF(sel=selector, nprobe=self._probes(passing))
        scores, labels = self._index.search(queries, k, params=params)
        found = []
        for row_scores, row_labels in zip(scores, labels, strict=True):
            valid = row_labels >= 0
            found.append((self._slot_of[row_labels[valid]], row_scores[valid].astype(np.float32)))
        return found

    def _probes(self, passing: int) -> int:
        """Clusters a query reads: enough for ``probe_rows`` rows and ``probe_share`` of the scope,
        more as a filter leaves fewer rows per cluster, and all of them (a scan) for few rows."""
        clusters = int(self._index.nlist)
        if passing <= self._params.vector_cluster_min_rows or passing < _SCAN_SHARE * self.live:
            return clusters
        share = max(self._params.vector_probe_rows / self.live, self._params.vector_probe_share) * self.live / passing
        return min(clusters, math.ceil(clusters * share))
