"""Loading a transformers model for inference, as the embedder and the cross-encoder both do.

torch and transformers are imported here, inside the call, so importing a module that uses this
costs nothing and a worker's start-up stays within any process-init time limit.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Literal

__all__ = ["as_float32", "cuda_missing", "load_pretrained", "token_window"]


def load_pretrained(
    source: str, head: Literal["base", "sequence-classification"], *, device: str, threads: int
) -> tuple[Any, Any]:
    """The tokenizer and model of ``source`` (a folder or hub id), in eval mode on ``device``.

    fp32 on a CPU and fp16 on CUDA, whatever the folder stores; gradients off for the process;
    ``threads`` (when set) caps torch's CPU threads, per process, so that several workers on one
    host do not each take every core. Raises whatever transformers raises; callers say which model
    failed.
    """
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    # A progress bar on stderr is noise in server logs and stdio MCP sessions.
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    tokenizer = AutoTokenizer.from_pretrained(source)
    model_class = AutoModel if head == "base" else AutoModelForSequenceClassification
    # The load report lists unused heads (a pooler mean pooling never calls): noise.
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        model = model_class.from_pretrained(source, **as_float32()).to(device)
    finally:
        transformers_logging.set_verbosity(verbosity)
    model.eval()
    if device.startswith("cuda"):
        model = model.half()
    torch.set_grad_enabled(False)
    if threads:
        torch.set_num_threads(threads)
    return tokenizer, model


def cuda_missing() -> str | None:
    """Why torch cannot use a CUDA device here (a CPU build of torch, no driver, no GPU), or None.

    Asked in a child process: ``torch.cuda.is_available()`` initialises CUDA in the process that
    calls it, and a worker's pool processes, forked from it afterwards, could then use no GPU.
    """
    probe = "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "torch did not say within two minutes whether it sees a CUDA device"
    if done.returncode == 0:
        return None
    if done.returncode == 3:
        return "torch sees no CUDA device here (a CPU build of torch, or no NVIDIA driver or GPU)"
    lines = done.stderr.strip().splitlines()
    return f"torch cannot be imported: {lines[-1] if lines else f'exit {done.returncode}'}"


def as_float32() -> dict[str, Any]:
    """``from_pretrained``'s keyword that loads weights as fp32, whatever type a folder stores.

    transformers 5 loads weights in the type they are stored in: a folder saved in fp16 would run
    in fp16 on a CPU (several times slower, less exact) and export an fp16 ONNX graph.
    """
    import torch
    import transformers
    from packaging.version import Version

    # 4.56 renamed torch_dtype to dtype; 5.x warns on the old name.
    name = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
    return {name: torch.float32}


def token_window(tokenizer: Any, wanted: int) -> int:
    """``wanted`` tokens, capped by the model's positions: a longer window fails inside the forward pass."""
    return min(wanted, int(getattr(tokenizer, "model_max_length", 512) or 512), 100_000)
