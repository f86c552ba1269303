"""The rerankers (workers/models/rerankers.py): a real cross-encoder's logits, a second model's cosine, and
the names ``HIVEMEM_RERANK_MODEL`` accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.errors import ConfigError, EmbeddingError
from workers.models.rerankers import CrossEncoderReranker, EmbedderReranker, load_reranker

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")

PASSAGES = [
    "Deploys run from the release branch every Tuesday.",
    "The billing client times out after 30 seconds, which is far too long for the checkout page.",
    "Logs go to Loki.",
]


def test_a_cross_encoder_scores_each_pair_with_its_logit(cross_folder: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    reranker = CrossEncoderReranker(str(cross_folder), batch_size=2)
    scores = reranker.score("when do deploys run", PASSAGES)
    tokenizer = AutoTokenizer.from_pretrained(str(cross_folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(cross_folder)).eval()
    with torch.inference_mode():
        for passage, score in zip(PASSAGES, scores, strict=True):
            pair = tokenizer("when do deploys run", passage, return_tensors="pt")
            assert score == pytest.approx(float(model(**pair).logits[0, -1]), abs=1e-4)
    # Batching (and the length sort behind it) changes no score.
    assert CrossEncoderReranker(str(cross_folder), batch_size=16).score("when do deploys run", PASSAGES) == (
        pytest.approx(scores, abs=1e-4)
    )
    assert reranker.score("anything", []) == []
    assert reranker.model_id == str(cross_folder)


def test_a_cross_encoder_that_cannot_load_says_so(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(EmbeddingError, match="cannot load rerank model"):
        CrossEncoderReranker(str(tmp_path)).score("q", ["p"])


def test_a_second_embedder_rescores_by_cosine() -> None:
    embedder = HashEmbedder(64)
    reranker = EmbedderReranker(embedder)
    scores = reranker.score("billing client timeout", [*PASSAGES, "billing client timeout"])
    (query,) = embedder.embed_queries(["billing client timeout"])
    (same,) = embedder.embed_passages(["billing client timeout"])
    assert scores[-1] == pytest.approx(sum(a * b for a, b in zip(query, same, strict=True)))
    assert max(scores) == scores[-1]
    assert reranker.model_id == embedder.model_id


def test_the_rerank_model_setting(cross_folder: Path) -> None:
    assert load_reranker(Settings()) is None
    assert isinstance(load_reranker(Settings(rerank_model="bi:hash:32")), EmbedderReranker)
    cross = load_reranker(Settings(rerank_model=f"cross:{cross_folder}"))
    assert isinstance(cross, CrossEncoderReranker) and cross.model_id == str(cross_folder)
    for wrong in ("bge-reranker", "cross:", "bi:"):
        with pytest.raises(ConfigError, match="HIVEMEM_RERANK_MODEL"):
            load_reranker(Settings(rerank_model=wrong))


def test_the_pool_needs_a_broker_and_a_model() -> None:
    with pytest.raises(ValueError, match="HIVEMEM_BROKER_URL"):
        Settings(rerank_pool=True, rerank_model="bi:hash:32")
    with pytest.raises(ValueError, match="HIVEMEM_RERANK_MODEL"):
        Settings(rerank_pool=True, broker_url="redis://127.0.0.1:6379/0")


def test_a_model_folder_stored_in_fp16_runs_in_fp32_on_a_cpu(cross_folder: Path, tmp_path: Path) -> None:
    # Many published folders store fp16 weights; transformers 5 would load them as fp16 and a CPU
    # would compute in fp16, slower and less exactly.
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from workers.models.pretrained import load_pretrained

    half = tmp_path / "half"
    AutoModelForSequenceClassification.from_pretrained(str(cross_folder)).half().save_pretrained(str(half))
    AutoTokenizer.from_pretrained(str(cross_folder)).save_pretrained(str(half))
    _, model = load_pretrained(str(half), "sequence-classification", device="cpu", threads=0)
    assert model.dtype == torch.float32
    stored = CrossEncoderReranker(str(cross_folder)).score("which runner", ["we use vitest"])
    assert CrossEncoderReranker(str(half)).score("which runner", ["we use vitest"]) == pytest.approx(stored, abs=1e-2)
