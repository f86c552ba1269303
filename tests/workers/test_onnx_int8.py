"""The packaged model's 8-bit copy (workers/models/onnx_int8.py): the model's vectors within cosine 0.998,
made once, and float32 where it cannot be had."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from hivemem.config import Settings
from tests.workers.counted import counted
from workers.models import onnx_int8
from workers.models.embed import (
    PACKAGED_MODEL_ID,
    TransformersEmbedder,
    load_embedder,
    packaged_model_path,
    vectors_made_by,
)
from workers.models.embed_tuning import EmbedTuning
from workers.models.onnx_embed import OnnxEmbedder
from workers.models.onnx_export import exported_model
from workers.models.onnx_int8 import int8_model_file

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")
quantization = pytest.importorskip("onnxruntime.quantization", reason="onnxruntime has no quantization tools")
pytestmark = pytest.mark.model

TEXTS = [
    "The deployment failed because the disk was full.",
    "We decided to use PostgreSQL for billing.",
    "why did the release break?",
    "Caroline went to the LGBTQ support group on 7 May 2023 and found it powerful.",
    "Alice prefers tabs over spaces, " * 40,  # past the 256-token window
    "x",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def float32_model(cache: Path) -> Iterator[OnnxEmbedder]:
    embedder = OnnxEmbedder(packaged_model_path(), cache, model_id=PACKAGED_MODEL_ID, weights="float32")
    embedder.load()
    yield embedder


@pytest.fixture(scope="module")
def int8_model(cache: Path) -> Iterator[OnnxEmbedder]:
    embedder = OnnxEmbedder(packaged_model_path(), cache, model_id=PACKAGED_MODEL_ID, weights="int8")
    embedder.load()
    yield embedder


def test_the_8_bit_copy_gives_the_models_vectors_within_cosine_0_998(
    float32_model: OnnxEmbedder, int8_model: OnnxEmbedder
) -> None:
    assert int8_model.weights == "int8" and float32_model.weights == "float32"
    assert int8_model.model_id == PACKAGED_MODEL_ID and int8_model.dimension == 384
    for kind in ("embed_queries", "embed_passages", "embed_documents"):
        ours = np.asarray(getattr(int8_model, kind)(TEXTS))
        theirs = np.asarray(getattr(float32_model, kind)(TEXTS))
        assert ours.shape == (len(TEXTS), 384)
        assert np.linalg.norm(ours, axis=1) == pytest.approx([1.0] * len(TEXTS), abs=1e-4)
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() > 0.998 and cosines.mean() > 0.999, kind
        assert not np.array_equal(ours, theirs), "the 8-bit copy computes its own vectors"


def test_a_question_finds_the_same_memory_with_either_weights(
    float32_model: OnnxEmbedder, int8_model: OnnxEmbedder
) -> None:
    memories = float32_model.embed_passages(TEXTS[:4])
    questions = ["what broke the deploy?", "which database holds billing?", "where did Caroline go in May?"]
    for question, expected in zip(questions, (0, 1, 3), strict=True):
        for model in (float32_model, int8_model):
            scores = np.asarray(memories) @ np.asarray(model.embed_queries([question])[0])
            assert int(np.argmax(scores)) == expected, (model.weights, question)


def test_the_copy_is_made_once_beside_the_export_and_leaves_nothing_else(cache: Path, int8_model: OnnxEmbedder) -> None:
    model = exported_model(packaged_model_path(), cache)
    first = int8_model_file(model)
    made = first.stat().st_mtime_ns
    assert first.parent == model.folder and first.name == "model.int8.onnx"
    assert int8_model_file(model).stat().st_mtime_ns == made
    assert sorted(p.name for p in model.folder.iterdir() if p.name.startswith(".")) == []


def test_two_processes_making_it_at_once_make_one_whole_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = exported_model(packaged_model_path(), tmp_path)
    made_by = counted(monkeypatch, onnx_int8, "_quantize")
    with ThreadPoolExecutor(max_workers=2) as pool:
        made = list(pool.map(lambda _: int8_model_file(model), range(2)))
    assert made[0] == made[1] and made[0].is_file()
    assert len(made_by) == 1  # the second waited for the first one's copy
    assert sorted(p.name for p in model.folder.iterdir()) == sorted(
        ["hivemem-onnx.json", "hivemem-source.txt", "model.onnx", "model.int8.onnx", "tokenizer.json"]
    )
    embedder = OnnxEmbedder(packaged_model_path(), tmp_path, model_id=PACKAGED_MODEL_ID, weights="int8")
    assert len(embedder.embed_queries(["a whole copy loads"])[0]) == 384


def test_without_the_quantizers_packages_float32_serves_with_a_warning(
    tmp_path: Path, float32_model: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As on a machine where onnx-ir is not installed: importing it fails, and so does the quantizer.
    monkeypatch.setitem(sys.modules, "onnx_ir", None)
    monkeypatch.delitem(sys.modules, "onnxruntime.quantization.matmul_nbits_quantizer", raising=False)
    monkeypatch.delattr(quantization, "matmul_nbits_quantizer", raising=False)
    embedder = OnnxEmbedder(packaged_model_path(), tmp_path, model_id=PACKAGED_MODEL_ID, weights="int8")
    with caplog.at_level(logging.WARNING, logger="workers.models.onnx_embed"):
        vectors = np.asarray(embedder.embed_queries(TEXTS))
    assert embedder.weights == "float32"
    assert "embedding with float32 weights" in caplog.text and "onnx_ir" in caplog.text
    assert vectors == pytest.approx(np.asarray(float32_model.embed_queries(TEXTS)), abs=1e-5)
    assert not list(tmp_path.rglob("model.int8.onnx")) and not list(tmp_path.rglob(".*partial"))
    assert vectors_made_by(embedder) == PACKAGED_MODEL_ID


def test_the_setting_picks_the_weights(tmp_path: Path) -> None:
    default = load_embedder(Settings(model_cache_dir=tmp_path))
    assert isinstance(default, OnnxEmbedder)
    assert vectors_made_by(default) == PACKAGED_MODEL_ID and default.weights == "float32"
    eight_bit = load_embedder(Settings(model_cache_dir=tmp_path), EmbedTuning(embed_weights="int8"))
    assert isinstance(eight_bit, OnnxEmbedder)
    assert vectors_made_by(eight_bit) == f"{PACKAGED_MODEL_ID}:int8" and eight_bit.weights == "int8"
    assert eight_bit.model_id == default.model_id  # the same model's vectors: nothing re-embeds
    with pytest.raises(ValidationError, match="embed_weights"):
        EmbedTuning(embed_weights="int4")  # type: ignore[arg-type]


def test_making_the_copy_leaves_the_process_logging_as_it_was(tmp_path: Path) -> None:
    # onnxruntime's quantizer calls logging.basicConfig(level=INFO) on import; in a fresh process
    # (a CLI command) that would print its line per graph node and every later INFO line.
    script = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from workers.models.embed import packaged_model_path\n"
        "from workers.models.onnx_export import exported_model\n"
        "from workers.models.onnx_int8 import int8_model_file\n"
        f"int8_model_file(exported_model(packaged_model_path(), Path({str(tmp_path)!r})))\n"
        "logging.getLogger('hivemem.anything').info('an info line nobody asked for')\n"
        "print(len(logging.getLogger().handlers), logging.getLogger().level)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split() == ["0", str(logging.WARNING)]
    assert "skip to quantize" not in done.stderr and "nobody asked for" not in done.stderr
    assert len(list(tmp_path.glob("*/model.int8.onnx"))) == 1


def test_when_torch_takes_over_from_a_damaged_export_the_vectors_are_float32(tmp_path: Path) -> None:
    exported = exported_model(packaged_model_path(), tmp_path)
    exported.model_file.write_bytes(b"not an onnx model")
    torch_model = TransformersEmbedder()
    damaged = OnnxEmbedder(
        packaged_model_path(), tmp_path, model_id=PACKAGED_MODEL_ID, weights="int8", fallback=torch_model
    )
    assert damaged.embed_queries(TEXTS[:2]) == torch_model.embed_queries(TEXTS[:2])
    assert damaged.weights == "float32" and vectors_made_by(damaged) == PACKAGED_MODEL_ID
    assert not (exported.folder / "model.int8.onnx").exists()
