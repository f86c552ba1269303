"""The tuning of the embedding model's runtime: what runs it, with which weights, in batches of how
many texts, how many calls at once, and how many tokens of a text it reads.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hivemem.tuning import Tuning

__all__ = ["EmbedTuning"]


class EmbedTuning(Tuning):
    """The numbers of the embedder's runtime."""

    group_title: ClassVar[str] = "Embedding runtime"

    embed_batch_size: int = Field(default=32, ge=1, le=1024, description="Texts per embedder batch.")
    embed_runtime: Literal["auto", "onnx", "torch"] = Field(
        default="auto",
        description="What runs the embedding model: `onnx` (onnxruntime on the CPU, on an ONNX copy of the model "
        "folder exported once under the data dir; the same vectors, about twice as fast as torch, one call per "
        "core at once), `torch`, or `auto` (onnx on a CPU for a model folder when onnxruntime is installed, "
        "else torch; a failed export falls back to torch with a warning).",
    )
    embed_weights: Literal["int8", "float32"] = Field(
        default="float32",
        description="The weights the onnx runtime computes with: `float32` (the model's own vectors) or `int8` "
        "(an 8-bit copy of the ONNX model, made once beside it: weights in blocks of 32, multiplied in int8; "
        "vectors within cosine 0.998 of the model's; all-mpnet-base-v2 recalls in three quarters of the time "
        "and embeds about 1.5x as fast, MiniLM gains 10-30 %; where the copy cannot be made, float32 with a "
        "warning). torch ignores it.",
    )
    embed_parallel: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Model calls run at once in one process (the embedded shape's model threads); 0 lets the "
        "runtime say: one per core for onnx, one for torch, whose own threads already take every core.",
    )
    embed_max_length: int = Field(
        default=256, ge=8, le=8192, description="Tokens of a memory or a query the embedder reads."
    )
    knowledge_embed_max_length: int = Field(
        default=512,
        ge=8,
        le=8192,
        description="Tokens of a document chunk the embedder reads (capped by the model's own window); "
        "a 1,200-character chunk runs to about 300 tokens, past a memory's 256.",
    )
