"""Loading a transformers model for inference, as the embedder and the cross-encoder both do.

torch and transformers are imported here, inside the call, so importing a module that uses this
costs nothing and a worker's start-up stays within any process-init time limit.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["load_pretrained", "token_window"]


def load_pretrained(
    source: str, head: Literal["base", "sequence-classification"], *, device: str, threads: int
) -> tuple[Any, Any]:
    """The tokenizer and model of ``source`` (a folder or hub id), in eval mode on ``device``.

    fp16 on CUDA; gradients off for the process; ``threads`` (when set) caps torch's CPU threads,
    per process, so that several workers on one host do not each take every core. Raises whatever
    transformers raises; callers say which model failed.
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
        model = model_class.from_pretrained(source).to(device)
    finally:
        transformers_logging.set_verbosity(verbosity)
    model.eval()
    if device == "cuda":
        model = model.half()
    torch.set_grad_enabled(False)
    if threads:
        torch.set_num_threads(threads)
    return tokenizer, model


def token_window(tokenizer: Any, wanted: int) -> int:
    """``wanted`` tokens, capped by the model's positions: a longer window fails inside the forward pass."""
    return min(wanted, int(getattr(tokenizer, "model_max_length", 512) or 512), 100_000)
