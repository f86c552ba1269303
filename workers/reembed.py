"""Re-embedding: when the configured embedding model changes, every memory and chunk gets a vector of
the new model in the background, while recall keeps serving from the old vectors.

The job stages new vectors batch by batch (:class:`search.capabilities.ReEmbeds`), then swaps them in and
switches the server's embedder to the new model in one step, taken while no recall is between
embedding its query and searching (the ``gate``). Memories written meanwhile are embedded with the
old model and become pending for the new one, so the job goes round until nothing is left and the
swap succeeds. Progress is the job's (``GET /v1/jobs/{id}``); the swap is audited (``reembed``).
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Protocol

from hivemem.embedding import Embedder
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.jobs import Job, JobKind, new_job_id
from hivemem.model import GLOBAL_SCOPE, AuditEvent
from hivemem.read_write_lock import ReadWriteLock
from search.base import RelationStore
from search.capabilities import ReEmbeds
from workers.job_board import JobBoard

__all__ = ["BATCH", "ReEmbeddingStore", "Reembedding"]

log = logging.getLogger(__name__)

BATCH = 64  # memories or chunks embedded per model call


class ReEmbeddingStore(ReEmbeds, RelationStore, Protocol):
    """What a re-embed needs of the store: staging and swapping vectors, and the audit log."""


class Reembedding:
    """One re-embed of ``store`` to ``target``'s model, on a thread of its own."""

    def __init__(
        self,
        store: ReEmbeddingStore,
        serving: QueuedEmbedder,
        target: Embedder,
        board: JobBoard,
        gate: ReadWriteLock,
        *,
        author: str,
    ) -> None:
        self._store = store
        self._serving = serving
        self._target = target
        self._board = board
        self._gate = gate
        self._author = author
        self._stop = threading.Event()
        self.model = target.model_id
        self.job = Job(id=new_job_id(), kind=JobKind.REEMBED)
        self._thread = threading.Thread(target=self._run, name="hivemem-reembed", daemon=True)

    def start(self) -> Job:
        """Create the job and start it; its total is the batches pending now, plus the swap."""
        pending = self._store.reembed_remaining(self.model)
        self.job.total = math.ceil(pending / BATCH) + 1
        self._board.create(self.job)
        self._thread.start()
        return self.job

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the job to end (done, failed or stopped); True once it has."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop after the batch in hand (the staged vectors stay: a later run goes on from them)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            self._board.start(self.job.id)
            self._reembed()
        except Exception as exc:  # the job reports it; the server keeps serving the old model
            log.exception("re-embedding to %s failed", self.model)
            self._board.fail(self.job.id, f"{type(exc).__name__}: {exc}")

    def _reembed(self) -> None:
        dimension = self._target.dimension
        done = memories = chunks = 0
        while not self._stop.is_set():
            batch = self._store.reembed_pending(self.model, BATCH)
            if len(batch) == 0:
                with self._gate.writing():
                    if self._store.reembed_swap(self.model, dimension):
                        self._serving.switch(self._target)
                        break
                continue  # written meanwhile: embed those too
            memory_vectors = self._target.embed_passages([m.embedding_text() for m in batch.memories])
            chunk_vectors = self._target.embed_documents([c.context for c in batch.chunks]) if batch.chunks else []
            self._store.reembed_stage(
                self.model,
                dimension,
                list(zip(batch.memories, memory_vectors, strict=True)),
                list(zip(batch.chunks, chunk_vectors, strict=True)),
            )
            memories += len(batch.memories)
            chunks += len(batch.chunks)
            # Batches past the first count (writes meanwhile) are not recorded: the job is done at the swap.
            if done < self.job.total - 1:
                item = {"index": done, "outcome": "reembedded", "memories": len(batch.memories)}
                self._board.record(self.job.id, {f"batch-{done}": item | {"chunks": len(batch.chunks)}})
                done += 1
        if self._stop.is_set():
            self._board.fail(self.job.id, "stopped before the swap (the server closed); it resumes at the next start")
            return
        fillers = {
            f"batch-{i}": {"index": i, "outcome": "reembedded", "memories": 0, "chunks": 0}
            for i in range(done, self.job.total - 1)
        }
        detail = {"model": self.model, "dimension": dimension, "memories": memories, "chunks": chunks}
        self._store.audit(AuditEvent("reembed", "", GLOBAL_SCOPE, self._author, detail))
        self._board.record(
            self.job.id, fillers | {"swap": {"index": self.job.total - 1, "outcome": "swapped", **detail}}
        )
        log.info("re-embedded %d memories and %d chunks with %s", memories, chunks, self.model)
