"""The embedder on onnxruntime's CPU provider: the same model, the same vectors, about twice as fast.

Why (measured on 2 cores, all-MiniLM-L6-v2, SciFact claims of 22 tokens on average): torch took
18.5 ms for one query and 11.2 ms a query in batches of 16; onnxruntime, on the ONNX copy that
:mod:`workers.models.onnx_export` makes of the same weights, 8.3 ms for one. And a call on one thread takes
9.4 ms against 9.0 on two, so the embedded shape runs one call per core at once
(:attr:`OnnxEmbedder.parallel_calls`) instead of one call on every core: twice the queries per
second under load, where torch's per-calling-thread pools made parallel callers slower. The vectors
are the model's own (cosine to torch's >= 0.9999). With ``weights="int8"`` (``HIVEMEM_EMBED_WEIGHTS``) it
runs the 8-bit copy that :mod:`workers.models.onnx_int8` makes: a query about 1.3 times as fast again
(all-mpnet-base-v2: 1.5), vectors within cosine 0.998 of these.

onnxruntime and ``tokenizers`` are imported on first use; torch only once, to export.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hivemem.embedding import Embedder
from hivemem.errors import EmbeddingError
from workers.models.onnx_export import ExportedModel, exported_model
from workers.models.onnx_int8 import int8_model_file
from workers.models.onnx_prebuilt import pool

__all__ = ["OnnxEmbedder", "Weights", "onnx_available"]

Weights = Literal["int8", "float32"]

log = logging.getLogger(__name__)


def onnx_available() -> bool:
    """Whether onnxruntime and tokenizers can be imported here."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


# The window a batch size is counted at. Attention takes memory in rows × tokens², and
# onnxruntime's arena keeps what its largest run took for the life of the process: 600 document
# chunks of ~300 tokens in batches of 32 grew a process by 960 MB, held for good. A batch of longer
# texts therefore has fewer rows, so that no batch costs more than ``batch_size`` texts of this many
# tokens: the same chunks then grew it by 50 MB, and embedded 15% faster (a 2-core CPU gains nothing
# from wide batches of long texts; memories of 20-120 words: 36.5 texts/s against 32.8).
BATCH_TOKENS_AT = 64


def _rows_that_fit(batch_size: int, tokens: int) -> int:
    """How many texts padded to ``tokens`` fit in the memory of ``batch_size`` texts of
    ``BATCH_TOKENS_AT`` tokens (at least one)."""
    if tokens <= BATCH_TOKENS_AT:
        return batch_size
    return max(1, batch_size * BATCH_TOKENS_AT * BATCH_TOKENS_AT // (tokens * tokens))


class OnnxEmbedder:
    """An :class:`hivemem.embedding.Embedder` running an ONNX copy of a model folder on the CPU.

    ``threads`` is onnxruntime's threads per call (0: one). Calls may run concurrently from
    several threads; :attr:`parallel_calls` says how many pay off. With a ``fallback``, a model that
    cannot be exported or loaded is logged once and every call goes to the fallback instead.
    ``weights="int8"`` runs the model's 8-bit copy; where that copy cannot be made or run (the
    quantizer's packages missing, an onnxruntime without the kernel), a warning is logged once and
    the float32 weights serve: :attr:`weights` says which are in use.
    """

    def __init__(
        self,
        source: Path,
        cache_dir: Path,
        *,
        model_id: str,
        batch_size: int = 32,
        max_length: int = 256,
        document_max_length: int = 512,
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int = 0,
        weights: Weights = "float32",
        fallback: Embedder | None = None,
        prepared: Callable[[], ExportedModel] | None = None,
    ) -> None:
        self._source = source
        self._prepared = prepared
        self._fallback = fallback
        self._failed = False
        self._cache_dir = cache_dir
        self._model_id = model_id
        self._batch_size = batch_size
        self._max_length = max_length
        self._document_max_length = document_max_length
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._threads = threads or 1
        self._weights: Weights = weights
        self._lock = threading.Lock()
        self._local = threading.local()
        self._model: ExportedModel | None = None
        self._session: Any = None
        self._tokenizer_json = ""

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        if self._falls_back():
            return self._fallback.dimension  # type: ignore[union-attr]
        return self._loaded().dimension

    @property
    def weights(self) -> Weights:
        """The weights that compute the vectors: asked for, or float32 where int8 could not be had
        or the torch fallback serves (known once the model is loaded; :meth:`load` loads it)."""
        return "float32" if self._failed else self._weights

    @property
    def parallel_calls(self) -> int:
        """How many calls at once use the machine well: one per core, for one thread each (one
        when the fallback takes the calls)."""
        if self._falls_back():
            return 1
        return max(1, (os.cpu_count() or 1) // self._threads)

    def load(self) -> None:
        """Export (first use only) and load the model now. Safe from many threads."""
        if not self._falls_back():
            self._loaded()

    def _falls_back(self) -> bool:
        """Whether the fallback takes the calls: the model is loaded first, once, to know."""
        if self._fallback is None or self._model is not None:
            return False
        if not self._failed:
            try:
                self._loaded()
            except EmbeddingError as exc:
                log.warning("embedding with torch instead of onnxruntime: %s", exc)
                self._failed = True
        return self._failed

    def _loaded(self) -> ExportedModel:
        with self._lock:
            if self._model is not None:
                return self._model
            try:
                import onnxruntime

                model = self._prepared() if self._prepared else exported_model(self._source, self._cache_dir)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3  # warnings about unused initialisers are noise in a server log
                self._session = self._open_session(model, onnxruntime, options)
                self._tokenizer_json = model.tokenizer_file.read_text(encoding="utf-8")
            except Exception as exc:
                raise EmbeddingError(f"cannot load the ONNX copy of embedding model {self._source}: {exc}") from exc
            self._max_length = min(self._max_length, model.model_max_length)
            self._document_max_length = min(self._document_max_length, model.model_max_length)
            self._model = model
            return model

    def _open_session(self, model: ExportedModel, onnxruntime: Any, options: Any) -> Any:
        """A session on the weights asked for: the 8-bit copy, or float32 when that was asked or
        the copy cannot be had."""

        def session(model_file: Path) -> Any:
            return onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])

        if self._weights == "int8":
            try:
                return session(int8_model_file(model))
            except Exception as exc:  # ImportError, a quantizer or kernel that refuses: float32 still works
                log.warning("embedding with float32 weights: no 8-bit copy of %s: %s", self._source, exc)
                self._weights = "float32"
        return session(model.model_file)

    def _tokenizer(self, max_length: int) -> Any:
        """This thread's tokenizer for ``max_length`` (a tokenizer's padding and truncation are its
        state, so threads never share one)."""
        cache: dict[int, Any] | None = getattr(self._local, "tokenizers", None)
        if cache is None:
            cache = self._local.tokenizers = {}
        tokenizer = cache.get(max_length)
        if tokenizer is None:
            from tokenizers import Tokenizer

            model = self._loaded()
            tokenizer = Tokenizer.from_str(self._tokenizer_json)
            tokenizer.enable_truncation(max_length=max_length)
            tokenizer.enable_padding(pad_id=model.pad_id, pad_token=model.pad_token)
            cache[max_length] = tokenizer
        return tokenizer

    def _encode(self, texts: Sequence[str], max_length: int) -> list[list[float]]:
        if not texts:
            return []
        model = self._loaded()
        tokenizer = self._tokenizer(max_length)
        # Batches of similar length waste less padding; results go back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        start = 0
        while start < len(order):
            index = order[start : start + self._batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in index])
            fits = _rows_that_fit(self._batch_size, len(encodings[0].ids))
            if fits < len(index):
                index = index[:fits]
                encodings = tokenizer.encode_batch([texts[i] for i in index])
            start += len(index)
            columns = {
                "input_ids": [e.ids for e in encodings],
                "attention_mask": [e.attention_mask for e in encodings],
                "token_type_ids": [e.type_ids for e in encodings],
            }
            feed = {name: np.asarray(columns[name], dtype=np.int64) for name in model.inputs}
            try:
                vectors = pool(self._session.run(None, feed)[0], feed["attention_mask"], model.pooling)
            except Exception as exc:
                raise EmbeddingError(f"embedding {len(index)} texts failed: {exc}") from exc
            for i, vector in zip(index, vectors.tolist(), strict=True):
                out[i] = vector
        return out

    def release_work_memory(self) -> None:
        """Shrink onnxruntime's arena to what a one-token run takes. The arena keeps the largest
        run's memory for the life of the session: after embedding a document of 2,400-character
        chunks it held +65 MB that no query needs; one tiny run with shrinkage on hands all of it
        back (shrinking after every run cost 13 % of a document's embedding time instead)."""
        if self._model is None or self._failed:  # nothing loaded, or the fallback embeds
            return
        import onnxruntime

        options = onnxruntime.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        feed = {name: np.ones((1, 1), dtype=np.int64) for name in self._model.inputs}
        try:
            self._session.run(None, feed, options)
        except Exception as exc:  # memory stays held; embedding still works
            log.warning("could not release the model's working memory: %s", exc)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if self._falls_back():
            return self._fallback.embed_passages(texts)  # type: ignore[union-attr]
        self._loaded()  # the windows are known, capped by the model, once it is loaded
        return self._encode([self._passage_prefix + t for t in texts], self._max_length)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        if self._falls_back():
            return self._fallback.embed_queries(texts)  # type: ignore[union-attr]
        self._loaded()
        return self._encode([self._query_prefix + t for t in texts], self._max_length)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self._falls_back():
            return self._fallback.embed_documents(texts)  # type: ignore[union-attr]
        self._loaded()
        return self._encode([self._passage_prefix + t for t in texts], self._document_max_length)
