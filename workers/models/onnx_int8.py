"""An 8-bit copy of an exported model: each weight matrix in blocks of 32 with one scale a block,
multiplied in int8 (onnxruntime's ``MatMulNBits``, ``accuracy_level`` 4).

Why (measured on 2 cores, SciFact claims, the model alone): a query embedding reads every weight
once, so the float32 model is bound by memory traffic; with 8-bit weights all-MiniLM-L6-v2 embeds a
query in about 5.4 ms against 7.4 (two calls at once: 310 queries/s against 225) and
all-mpnet-base-v2 in about 35 ms against 51, and the vectors stay within cosine 0.998 of the
float32 model's (0.9997 on average over 200 claims, 0.999 for a one-letter text; LoCoMo and
SciFact rank alike, bench/RESULTS.md). Blocks of 128 were faster still and moved vectors further
(0.9984 at worst over the claims); 4-bit weights moved them to 0.93–0.97. The earlier 8-bit
attempt, onnxruntime's dynamic quantization, scales each activation tensor as a whole and moved
vectors to 0.91–0.96: the feed-forward outputs carry outliers that one scale cannot hold.

The copy is ``model.int8.onnx`` beside ``model.onnx`` in the export's folder, so it is keyed by
the same digest of the source; it is written under a private name and renamed into place, so a
process that dies half-way leaves nothing, and under the folder's lock, so the processes of a
worker pool starting at once make it once.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from types import ModuleType

from workers.models.model_folder import folder_lock
from workers.models.onnx_export import ExportedModel

__all__ = ["INT8_BLOCK_SIZE", "int8_model_file"]

INT8_BLOCK_SIZE = 32
_FILE = "model.int8.onnx"


def int8_model_file(model: ExportedModel) -> Path:
    """The 8-bit copy of ``model``'s ONNX file, made on first use (a second for MiniLM, a few for
    a base-sized model).

    Raises whatever onnx or the quantizer raise (``ImportError`` where the quantizer's packages are
    missing); the caller decides whether float32 weights will do instead.
    """
    target = model.folder / _FILE
    if target.is_file():
        return target
    with folder_lock(model.folder):
        if not target.is_file():  # else another process made it while this one waited
            _quantize(model, target)
    return target


def _quantize(model: ExportedModel, target: Path) -> None:
    import onnx

    nbits = _quantizer()
    config = nbits.DefaultWeightOnlyQuantConfig(block_size=INT8_BLOCK_SIZE, is_symmetric=True, bits=8, accuracy_level=4)
    quantizer = nbits.MatMulNBitsQuantizer(onnx.load(str(model.model_file)), algo_config=config)
    quantizer.process()
    staging = model.folder / f".{_FILE}.{uuid.uuid4().hex[:8]}.partial"
    try:
        quantizer.model.save_model_to_file(str(staging), use_external_data_format=False)
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


def _quantizer() -> ModuleType:
    """onnxruntime's weight-only quantizer, imported without letting it set up the process's logging.

    The module calls ``logging.basicConfig(level=INFO)`` on import: in a process that has not
    configured logging yet (a CLI command) every later log line of every library would be printed,
    and the quantizer's own line per graph node with them. With a handler in place basicConfig does
    nothing, so a placeholder stands in while it is imported; its own logger keeps warnings only.
    """
    root = logging.getLogger()
    placeholder = None if root.handlers else logging.NullHandler()
    if placeholder is not None:
        root.addHandler(placeholder)
    try:
        from onnxruntime.quantization import matmul_nbits_quantizer
    finally:
        if placeholder is not None:
            root.removeHandler(placeholder)
    module: ModuleType = matmul_nbits_quantizer  # untyped package
    logging.getLogger(module.__name__).setLevel(logging.WARNING)
    return module
