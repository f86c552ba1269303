"""An ONNX copy of a transformers embedding model, made once and cached (``model_cache_dir``).

The export traces the model with its pooling (mean over the attention mask, L2-normalised), so the
file computes exactly what :class:`workers.models.embed.TransformersEmbedder` computes, and writes the
model's fast tokenizer beside it: serving the copy needs onnxruntime and ``tokenizers``, not torch.

The copy is keyed by a digest of the source folder's files and this module's format: a changed
model is exported again, and copies of one model (a data dir per test, say) share one export.
It is built as every derived model folder is (:func:`workers.models.model_folder.built_folder`): in a
staging folder renamed into place, so a process that dies half-way leaves no broken copy, and under
a lock, so the processes of a worker pool starting at once export it once (an export holds the whole
model in memory for a while) and the others wait for it.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Literal

from workers.models.model_folder import built_folder
from workers.models.pretrained import as_float32

__all__ = ["META_FILE", "ExportedModel", "Pooling", "exported_model"]

_FORMAT = "hivemem-onnx-1"
META_FILE = "hivemem-onnx.json"
Pooling = Literal["none", "mean", "cls"]
"""What turns the model's output into a sentence vector: ``none`` (the file pools, as this module's
exports do), or ``mean`` / ``cls`` over its token states, then L2 (others' exports)."""
# The source files whose change means a different model (weights, config, vocabulary).
_KEYED_SUFFIXES = (".json", ".safetensors", ".bin", ".txt", ".model")


class ExportedModel:
    """What serving an exported model needs to know, read from its folder."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / META_FILE).read_text())
        self.folder = folder
        self.model_file = folder / "model.onnx"
        self.tokenizer_file = folder / "tokenizer.json"
        self.inputs: list[str] = list(meta["inputs"])
        self.dimension = int(meta["dimension"])
        self.pad_id = int(meta["pad_id"])
        self.pad_token = str(meta["pad_token"])
        self.model_max_length = int(meta["model_max_length"])
        pooling = meta.get("pooling", "none")
        if pooling not in ("none", "mean", "cls"):
            raise ValueError(f"{folder / META_FILE}: unknown pooling {pooling!r}")
        self.pooling: Pooling = pooling


def _stamp(source: Path) -> str:
    """A digest of the model's files' contents: copies of one model share one export."""
    digest = hashlib.sha256(_FORMAT.encode())
    for path in sorted(p for p in source.iterdir() if p.is_file() and p.suffix in _KEYED_SUFFIXES):
        digest.update(f"{path.name}:{path.stat().st_size};".encode())
        with path.open("rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()[:20]


def exported_model(source: Path, cache_dir: Path) -> ExportedModel:
    """The ONNX copy of the model folder ``source`` under ``cache_dir``, exported on first use.

    Raises whatever torch, transformers or the exporter raise; the caller says which model failed.
    """
    stamp = _stamp(source)
    folder = built_folder(cache_dir / f"{source.name}-{stamp}", stamp, lambda staging: _export(source, staging))
    return ExportedModel(folder)


def _export(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source))
        model = AutoModel.from_pretrained(str(source), **as_float32()).eval()
    finally:
        transformers_logging.set_verbosity(verbosity)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("the model has no fast tokenizer (tokenizer.json), which the ONNX runtime needs")
    inputs = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in tokenizer.model_input_names]
    if inputs[:2] != ["input_ids", "attention_mask"]:
        raise ValueError(f"unexpected model inputs {tokenizer.model_input_names}")

    class Pooled(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, *args: Any) -> Any:
            named = dict(zip(inputs, args, strict=True))
            hidden = self.encoder(**named).last_hidden_state
            mask = named["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    # Saved without padding or truncation (packaged tokenizers may pad every text to 128 tokens):
    # the embedder sets both per call, as transformers does. Saved before the sample call below,
    # which switches padding on in the backend.
    backend = tokenizer.backend_tokenizer
    backend.no_padding()
    backend.no_truncation()
    backend.save(str(target / "tokenizer.json"))
    sample = tokenizer(["an example", "a second, longer example text"], padding=True, return_tensors="pt")
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "tokens"} for name in inputs}
    with warnings.catch_warnings(), torch.inference_mode():
        # The tracer warns about Python-side shape checks it records as constants: they hold for any
        # batch and length here (the dynamic axes are declared), and a warning is no error to a server.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(model),
            tuple(sample[name] for name in inputs),
            str(target / "model.onnx"),
            input_names=inputs,
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    meta = {
        "format": _FORMAT,
        "inputs": inputs,
        "dimension": int(model.config.hidden_size),
        "pad_id": int(tokenizer.pad_token_id or 0),
        "pad_token": str(tokenizer.pad_token or "[PAD]"),
        "model_max_length": int(min(getattr(tokenizer, "model_max_length", 512) or 512, 100_000)),
        "exported_from": str(source),
    }
    (target / META_FILE).write_text(json.dumps(meta, indent=1))
