"""The rerankers: a cross-encoder over any sequence-classification folder, and a second model's cosine.

``HIVEMEM_RERANK_MODEL`` names one (:func:`load_reranker`):

- ``cross:PATH_OR_ID``: a cross-encoder (``AutoModelForSequenceClassification``) reading
  ``(query, passage)`` pairs; the score is the logit (the last one when the head has several
  labels, the "relevant" class of two-label heads). fp16 on CUDA.
- ``bi:NAME``: bi-encoder rescoring, the cosine of a second embedder (any ``HIVEMEM_EMBED_MODEL``
  name: ``e5-small``, a folder, ``hash:DIM``) between the query and each passage.
- ``e5-small``: short for ``bi:e5-small``, the packaged multilingual-e5-small.

torch and transformers load lazily, once per process, as the embedder does (workers/models/embed.py).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hivemem.config import Settings
from hivemem.embedding import Embedder
from hivemem.errors import ConfigError, EmbeddingError
from hivemem.rerank import Reranker
from workers.models.embed import load_embedder
from workers.models.pretrained import load_pretrained, token_window

__all__ = ["CrossEncoderReranker", "EmbedderReranker", "load_reranker"]


class CrossEncoderReranker:
    """A :class:`hivemem.rerank.Reranker` over a cross-encoder folder or hub id."""

    def __init__(
        self,
        model: str,
        *,
        device: str = "cpu",
        batch_size: int | None = None,
        max_length: int = 512,
        threads: int = 0,
    ) -> None:
        self._source = model
        self._device = device
        # A GPU scores a whole top 30 in one pass in about half the time of two passes of 16
        # (bench/RESULTS.md); on a CPU smaller batches pad less and hold less memory.
        self._batch_size = batch_size or (16 if device == "cpu" else 64)
        self._max_length = max_length
        self._threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        if Path(model).is_dir():
            # A local folder must never trigger a hub lookup (offline machines, air-gapped servers).
            os.environ.setdefault("HF_HUB_OFFLINE", "1")

    @property
    def model_id(self) -> str:
        return self._source

    def load(self) -> None:
        """Load tokenizer and weights now (otherwise on the first pairs scored). Safe from many threads."""
        with self._lock:
            if self._model is not None:
                return
            try:
                tokenizer, model = load_pretrained(
                    self._source, "sequence-classification", device=self._device, threads=self._threads
                )
            except Exception as exc:
                raise EmbeddingError(f"cannot load rerank model {self._source}: {exc}") from exc
            self._max_length = token_window(tokenizer, self._max_length)
            self._tokenizer, self._model = tokenizer, model

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        self.load()
        import torch

        # Similar lengths batch with less padding; scores go back in input order.
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        out = [0.0] * len(passages)
        with torch.inference_mode():
            for start in range(0, len(order), self._batch_size):
                index = order[start : start + self._batch_size]
                batch = self._tokenizer(
                    [query] * len(index),
                    [passages[i] for i in index],
                    padding=True,
                    truncation="only_second",
                    max_length=self._max_length,
                    return_tensors="pt",
                ).to(self._device)
                logits = self._model(**batch).logits.float()
                for i, value in zip(index, logits[:, -1].cpu().tolist(), strict=True):
                    out[i] = float(value)
        return out


class EmbedderReranker:
    """A :class:`hivemem.rerank.Reranker` that rescores with a second embedder's cosine."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        (asked,) = self._embedder.embed_queries([query])
        vectors = self._embedder.embed_passages(list(passages))
        # Both sides are unit length (the Embedder contract): the dot product is the cosine.
        return [math.fsum(a * b for a, b in zip(asked, v, strict=True)) for v in vectors]


def load_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``HIVEMEM_RERANK_MODEL`` names, or None when it is empty (the stage is off)."""
    name = settings.rerank_model.strip()
    if not name:
        return None
    kind, _, model = name.partition(":")
    if name == "e5-small":
        kind, model = "bi", name
    if kind == "bi" and model:
        second = settings.model_copy(update={"embed_model": model, "query_prefix": "", "passage_prefix": ""})
        return EmbedderReranker(load_embedder(second))
    if kind == "cross" and model:
        return CrossEncoderReranker(model, device=settings.embed_device, threads=settings.embed_threads)
    raise ConfigError(
        f"HIVEMEM_RERANK_MODEL={name!r}: expected cross:PATH_OR_ID (a cross-encoder), bi:MODEL (a second "
        "embedder's cosine, e.g. bi:e5-small) or e5-small"
    )
