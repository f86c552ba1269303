"""The model threads: every caller's texts batched, queries first, errors to their callers."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.embedding_queue import DOCUMENT_CHARS_PER_CALL, QueuedEmbedder
from hivemem.errors import EmbeddingError


class Recording:
    """A HashEmbedder that records each batch (kind, texts, thread) and can be held at the gate."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(16)
        self.batches: list[tuple[str, list[str], int]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    model_id = "recording"
    dimension = 16

    def _run(self, kind: str, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append((kind, list(texts), threading.get_ident()))
        self.entered.set()
        self.gate.wait()
        if any("boom" in t for t in texts):
            raise EmbeddingError("the model failed")
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._run("query", texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._run("passage", texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._run("document", texts)


def wait_queued(queued: QueuedEmbedder, pieces: int) -> None:
    """Wait for the condition itself: ``pieces`` pieces are queued behind the running batch."""
    while len(queued._queries) + len(queued._passages) + len(queued._documents) < pieces:
        threading.Event().wait(0.001)


def held(recording: Recording) -> QueuedEmbedder:
    """A queue whose model thread is busy with a first batch until ``recording.gate`` opens."""
    queued = QueuedEmbedder(recording, max_batch=4)
    recording.gate.clear()
    return queued


def test_callers_get_their_own_vectors_and_the_model_runs_on_one_thread() -> None:
    recording = Recording()
    queued = QueuedEmbedder(recording, max_batch=8)
    texts = [[f"text {i} {j}" for j in range(i % 3 + 1)] for i in range(40)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(queued.embed_passages, texts))
    for asked, got in zip(texts, results, strict=True):
        assert got == recording.inner.embed_passages(asked)
    assert len({thread for _, _, thread in recording.batches}) == 1
    assert threading.get_ident() not in {thread for _, _, thread in recording.batches}
    queued.close()


def test_calls_queued_during_a_batch_share_the_next_one_and_queries_go_first() -> None:
    recording = Recording()
    queued = held(recording)
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(queued.embed_passages, ["first"])
        recording.entered.wait()
        passages = [pool.submit(queued.embed_passages, [f"p{i}"]) for i in range(3)]
        wait_queued(queued, 3)
        queries = [pool.submit(queued.embed_queries, [f"q{i}"]) for i in range(2)]
        wait_queued(queued, 5)
        recording.gate.set()
        for future in [first, *passages, *queries]:
            assert len(future.result()) == 1
    kinds = [(kind, sorted(texts)) for kind, texts, _ in recording.batches]
    assert kinds == [("passage", ["first"]), ("query", ["q0", "q1"]), ("passage", ["p0", "p1", "p2"])]
    queued.close()


def test_document_chunks_wait_behind_memories_and_queries() -> None:
    # An ingest embeds in the background: a memorize or a recall queued meanwhile goes first.
    recording = Recording()
    queued = held(recording)
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(queued.embed_documents, ["chunk 0"])
        recording.entered.wait()
        chunks = pool.submit(queued.embed_documents, ["chunk 1", "chunk 2"])
        wait_queued(queued, 1)
        passage = pool.submit(queued.embed_passages, ["memory"])
        wait_queued(queued, 2)
        query = pool.submit(queued.embed_queries, ["question"])
        wait_queued(queued, 3)
        recording.gate.set()
        for future in (first, chunks, passage, query):
            future.result()
    kinds = [kind for kind, _, _ in recording.batches]
    assert kinds == ["document", "query", "passage", "document"]
    queued.close()


def test_a_bulk_is_cut_into_pieces_and_a_query_waits_for_one_piece_only() -> None:
    recording = Recording()
    queued = held(recording)
    bulk = [f"bulk {'long ' * (i % 4)}{i}" for i in range(10)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        vectors = pool.submit(queued.embed_passages, bulk)
        recording.entered.wait()  # the first piece of 4 is running
        query = pool.submit(queued.embed_queries, ["question"])
        wait_queued(queued, 3)
        recording.gate.set()
        assert vectors.result() == recording.inner.embed_passages(bulk)
        assert query.result() == recording.inner.embed_passages(["question"])
    sizes = [(kind, len(texts)) for kind, texts, _ in recording.batches]
    assert sizes == [("passage", 4), ("query", 1), ("passage", 4), ("passage", 2)]
    # The bulk's pieces hold texts of similar length: shortest first, so little of a batch is padding.
    lengths = [len(t) for kind, texts, _ in recording.batches if kind == "passage" for t in texts]
    assert lengths == sorted(lengths)
    queued.close()


def test_a_failed_batch_fails_its_callers_only_and_the_thread_goes_on() -> None:
    recording = Recording()
    queued = held(recording)
    with ThreadPoolExecutor(max_workers=4) as pool:
        blocker = pool.submit(queued.embed_queries, ["blocker"])
        recording.entered.wait()
        bad = pool.submit(queued.embed_passages, ["boom"])
        also_bad = pool.submit(queued.embed_passages, ["fine, but batched with boom"])
        wait_queued(queued, 2)
        recording.gate.set()
        assert len(blocker.result()) == 1
        for future in (bad, also_bad):
            with pytest.raises(EmbeddingError, match="the model failed"):
                future.result()
    assert len(queued.embed_queries(["after"])) == 1
    queued.close()
    with pytest.raises(EmbeddingError, match="closed"):
        queued.embed_queries(["too late"])


def test_several_model_threads_share_what_is_queued_between_them() -> None:
    """A runtime of one core per call gets a thread per core: queries that arrive while both
    threads are free are split between them, not batched on one, and both threads run at once."""
    recording = Recording()
    queued = QueuedEmbedder(recording, max_batch=8, threads=2)
    assert queued.threads == 2
    recording.gate.clear()
    # Both threads wait for work: whichever takes the first queries leaves the other its share,
    # however many have arrived by then (so this holds on a busy machine too).
    while queued._idle[False] < 2:
        threading.Event().wait(0.001)
    with ThreadPoolExecutor(max_workers=8) as pool:
        queries = [pool.submit(queued.embed_queries, [f"q{i}"]) for i in range(6)]
        while len({thread for _, _, thread in recording.batches}) < 2:  # the other takes its share
            threading.Event().wait(0.001)
        recording.gate.set()
        for future in queries:
            assert len(future.result()) == 1
    query_batches = [len(texts) for kind, texts, _ in recording.batches if kind == "query"]
    assert sum(query_batches) == 6 and max(query_batches) < 6
    queued.close()
    with pytest.raises(EmbeddingError, match="closed"):
        queued.embed_queries(["too late"])


def test_with_a_core_per_call_documents_are_embedded_a_few_chunks_a_call() -> None:
    recording = Recording()
    queued = QueuedEmbedder(recording, max_batch=32, threads=2)
    try:
        chunks = [f"chunk {i} " + "x" * 1190 for i in range(9)]  # 1,200 characters each
        assert len(queued.embed_documents(chunks)) == 9
        calls = [texts for kind, texts, _ in recording.batches if kind == "document"]
        assert max(sum(map(len, texts)) for texts in calls) <= DOCUMENT_CHARS_PER_CALL
        assert sorted(t for texts in calls for t in texts) == sorted(chunks)
        assert len(queued.embed_queries(["q"] * 40)) == 40  # other lanes keep their batches
        assert max(len(texts) for kind, texts, _ in recording.batches if kind == "query") > 2
    finally:
        queued.close()


class Vector(list[float]):
    """A vector that can be watched with a weak reference (a plain list cannot)."""


class Watched(Recording):
    def _run(self, kind: str, texts: Sequence[str]) -> list[list[float]]:
        return [Vector(v) for v in self.inner.embed_passages(texts)]


def test_an_idle_model_thread_holds_nothing_of_the_last_request() -> None:
    queued = QueuedEmbedder(Watched(), max_batch=4)
    try:
        vectors = queued.embed_documents([f"text {i}" for i in range(10)])
        watched = [weakref.ref(v) for v in vectors]
        del vectors
        gc.collect()
        # Neither the idle thread's locals nor a piece keep the request's vectors (a document's).
        assert [w() for w in watched] == [None] * 10
    finally:
        queued.close()


def test_documents_run_on_background_threads_only_and_the_rest_never_do() -> None:
    recording = Recording()
    started: list[int] = []
    queued = QueuedEmbedder(recording, max_batch=8, threads=2, background=lambda: started.append(threading.get_ident()))
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            documents = pool.submit(queued.embed_documents, [f"chunk {i} " + "y" * 600 for i in range(12)])
            queries = [pool.submit(queued.embed_queries, [f"query {i}"]) for i in range(12)]
            passages = pool.submit(queued.embed_passages, [f"memory {i}" for i in range(12)])
            assert len(documents.result()) == 12 and len(passages.result()) == 12
            assert all(len(q.result()) == 1 for q in queries)
        background = set(started)
        assert len(background) == 2 and queued.threads == 2  # two more threads, for documents only
        for kind, _, thread in recording.batches:
            assert (thread in background) == (kind == "document"), kind
    finally:
        queued.close()
