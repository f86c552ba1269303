"""An embedder that loads its model on first use, for processes that may never embed.

A CLI call that only reads or deletes (``get``, ``forget``, ``export``, ``token``…) needs the model's
id and dimension to open the store, not the model: the store records both. Loading the model took
seconds of such a call; now it waits for the first text to embed, and is checked then against what
the store recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from hivemem.embedding import Embedder, release_work_memory
from hivemem.errors import EmbeddingMismatchError

__all__ = ["LazyEmbedder"]


class LazyEmbedder:
    """:class:`hivemem.embedding.Embedder` of ``model_id`` and ``dimension``, loading ``load()`` once,
    on the first call that embeds. Thread-safe."""

    def __init__(self, model_id: str, dimension: int, load: Callable[[], Embedder]) -> None:
        self._model_id = model_id
        self._dimension = dimension
        self._load = load
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def loaded(self) -> bool:
        """Whether the model was loaded (something was embedded)."""
        return self._inner is not None

    def _model(self) -> Embedder:
        with self._lock:
            if self._inner is None:
                inner = self._load()
                if (inner.model_id, inner.dimension) != (self._model_id, self._dimension):
                    raise EmbeddingMismatchError(
                        f"the model loaded is {inner.model_id!r} ({inner.dimension} dims), "
                        f"not {self._model_id!r} ({self._dimension} dims) as expected"
                    )
                self._inner = inner
            return self._inner

    def release_work_memory(self) -> None:
        if self._inner is not None:  # a model never loaded holds nothing
            release_work_memory(self._inner)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._model().embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._model().embed_queries(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._model().embed_documents(texts)
