"""A tiny, randomly initialised cross-encoder folder for the rerank tests.

No cross-encoder weights can be had here, so the tests build one from a config: a two-layer BERT
with a one-logit sequence-classification head and the packaged MiniLM's tokenizer. Its scores mean
nothing, but they are a real model's logits, through the same code a trained cross-encoder runs.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["tiny_bert", "tiny_cross_encoder"]


def tiny_bert(folder: Path, model_class: type) -> Path:
    """A two-layer BERT of ``model_class`` (randomly initialised, seed 0) with the packaged MiniLM's
    tokenizer, written into ``folder``; a one-logit head where the class has one."""
    import torch
    from transformers import AutoTokenizer, BertConfig

    from workers.models.embed import packaged_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(packaged_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    torch.manual_seed(0)
    model_class(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def tiny_cross_encoder(folder: Path) -> Path:
    """Write the model into ``folder`` (once) and return it."""
    if (folder / "config.json").exists():
        return folder
    from transformers import BertForSequenceClassification

    return tiny_bert(folder, BertForSequenceClassification)
