"""The packaged model on onnxruntime: an ONNX copy exported once, the torch model's own vectors."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from hivemem.config import Settings
from hivemem.embedding import parallel_calls, release_work_memory
from hivemem.embedding_queue import QueuedEmbedder
from hivemem.errors import EmbeddingError
from tests.workers.counted import counted
from workers.models.embed import PACKAGED_MODEL_ID, TransformersEmbedder, load_embedder, packaged_model_path
from workers.models.embed_tuning import EmbedTuning
from workers.models.onnx_embed import BATCH_TOKENS_AT, OnnxEmbedder, _rows_that_fit
from workers.models.onnx_export import exported_model

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")
pytestmark = pytest.mark.model

TEXTS = [
    "The deployment failed because the disk was full.",
    "We decided to use PostgreSQL for billing.",
    "why did the release break?",
    "Alice prefers tabs over spaces, " * 40,  # past the 256-token window: truncated alike
    "x",
]


@pytest.fixture(scope="module")
def torch_model() -> Iterator[TransformersEmbedder]:
    embedder = TransformersEmbedder()
    embedder.load()
    yield embedder


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OnnxEmbedder]:
    embedder = OnnxEmbedder(packaged_model_path(), tmp_path_factory.mktemp("onnx-cache"), model_id=PACKAGED_MODEL_ID)
    embedder.load()
    yield embedder


def test_the_onnx_copy_gives_the_models_own_vectors(
    torch_model: TransformersEmbedder, onnx_model: OnnxEmbedder
) -> None:
    assert onnx_model.model_id == torch_model.model_id and onnx_model.dimension == 384
    for kind in ("embed_queries", "embed_passages", "embed_documents"):
        ours = np.asarray(getattr(onnx_model, kind)(TEXTS))
        theirs = np.asarray(getattr(torch_model, kind)(TEXTS))
        assert ours.shape == (len(TEXTS), 384)
        assert np.linalg.norm(ours, axis=1) == pytest.approx([1.0] * len(TEXTS), abs=1e-5)
        assert (ours * theirs).sum(axis=1).min() > 0.9999, kind


def test_calls_from_several_threads_at_once_get_what_they_would_alone(onnx_model: OnnxEmbedder) -> None:
    alone = [onnx_model.embed_queries([t])[0] for t in TEXTS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda t: onnx_model.embed_queries([t])[0], TEXTS * 4))
    assert np.asarray(together) == pytest.approx(np.asarray(alone * 4), abs=1e-5)
    assert parallel_calls(onnx_model) >= 1


def test_a_model_is_exported_once_and_copies_of_it_share_the_export(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = exported_model(packaged_model_path(), cache)
    made = first.model_file.stat().st_mtime_ns
    copy = tmp_path / "copy" / packaged_model_path().name
    shutil.copytree(packaged_model_path(), copy)
    again = exported_model(copy, cache)
    assert again.folder == first.folder and again.model_file.stat().st_mtime_ns == made
    # No staging folder left behind (the hidden file is the builders' lock).
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == [first.folder.name]
    assert not list(cache.glob("*.partial"))


def test_processes_starting_at_once_export_the_model_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker pool's processes all load the model when they start: one exports, the others wait
    # for its copy instead of each holding the model in memory to export it again.
    import workers.models.onnx_export as onnx_export

    exports = counted(monkeypatch, onnx_export, "_export")
    with ThreadPoolExecutor(max_workers=3) as pool:
        copies = list(pool.map(lambda _: exported_model(packaged_model_path(), tmp_path), range(3)))
    assert len(exports) == 1
    assert {c.folder for c in copies} == {copies[0].folder} and copies[0].model_file.is_file()


def test_the_runtime_is_chosen_by_setting(tmp_path: Path) -> None:
    assert isinstance(load_embedder(Settings(model_cache_dir=tmp_path)), OnnxEmbedder)
    assert isinstance(load_embedder(Settings(), EmbedTuning(embed_runtime="torch")), TransformersEmbedder)
    assert isinstance(load_embedder(Settings(embed_device="cuda")), TransformersEmbedder)  # auto: torch on a GPU
    with pytest.raises(EmbeddingError, match="runs on the CPU"):
        load_embedder(Settings(embed_device="cuda"), EmbedTuning(embed_runtime="onnx"))
    with pytest.raises(EmbeddingError, match="needs a model folder"):
        load_embedder(Settings(embed_model="some-org/some-model"), EmbedTuning(embed_runtime="onnx"))
    # A hub id is torch's to download, where the network allows.
    assert isinstance(load_embedder(Settings(embed_model="some-org/some-model")), TransformersEmbedder)


def test_a_damaged_export_falls_back_to_torch_or_is_refused(
    tmp_path: Path, torch_model: TransformersEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    exported = exported_model(packaged_model_path(), tmp_path)
    exported.model_file.write_bytes(b"not an onnx model")
    # With a fallback (the auto runtime): it warns once and embeds with torch.
    damaged = OnnxEmbedder(packaged_model_path(), tmp_path, model_id=PACKAGED_MODEL_ID, fallback=torch_model)
    with caplog.at_level(logging.WARNING, logger="workers.models.onnx_embed"):
        vectors = damaged.embed_queries(TEXTS[:2])
        assert damaged.parallel_calls == 1
    assert vectors == torch_model.embed_queries(TEXTS[:2])
    assert sum("instead of onnxruntime" in r.message for r in caplog.records) == 1
    # Without (HIVEMEM_EMBED_RUNTIME=onnx): a clear error naming the model.
    strict = OnnxEmbedder(packaged_model_path(), tmp_path, model_id=PACKAGED_MODEL_ID)
    with pytest.raises(EmbeddingError, match="cannot load the ONNX copy"):
        strict.embed_queries(["a query"])


def test_a_folder_stored_in_fp16_is_exported_and_run_in_fp32(tmp_path: Path) -> None:
    # transformers 5 would load it as fp16, and an fp16 graph runs poorly (or not) on onnxruntime's CPU.
    from transformers import BertModel

    from tests.rerank_models import tiny_bert

    half = tmp_path / "half"
    tiny_bert(tmp_path / "full", BertModel)
    BertModel.from_pretrained(str(tmp_path / "full")).half().save_pretrained(str(half))
    shutil.copy(tmp_path / "full" / "tokenizer.json", half / "tokenizer.json")
    shutil.copy(tmp_path / "full" / "tokenizer_config.json", half / "tokenizer_config.json")
    onnx = OnnxEmbedder(half, tmp_path / "cache", model_id="tiny")
    ours = np.asarray(onnx.embed_passages(TEXTS))
    assert ours.dtype == np.float64 and np.linalg.norm(ours, axis=1) == pytest.approx([1.0] * len(TEXTS), abs=1e-5)
    theirs = np.asarray(TransformersEmbedder(str(half)).embed_passages(TEXTS))
    assert (ours * theirs).sum(axis=1).min() > 0.9999
    import onnx as onnx_format

    graph = onnx_format.load(str(exported_model(half, tmp_path / "cache").model_file)).graph
    assert {init.data_type for init in graph.initializer} <= {
        onnx_format.TensorProto.FLOAT,
        onnx_format.TensorProto.INT64,
    }


def test_long_texts_embed_in_narrower_batches_with_the_same_vectors(onnx_model: OnnxEmbedder) -> None:
    # Rows shrink as tokens grow (attention's memory is rows × tokens²): never below one row.
    assert _rows_that_fit(32, 20) == 32
    assert _rows_that_fit(32, BATCH_TOKENS_AT * 2) == 8
    assert _rows_that_fit(32, 512) == 1
    mixed = [f"Runbook step {i}: " + "drain the queue, then restart the worker. " * (i % 7 * 9) for i in range(40)]
    together = np.asarray(onnx_model.embed_documents(mixed))
    alone = np.asarray([onnx_model.embed_documents([text])[0] for text in mixed])
    assert (together * alone).sum(axis=1).min() > 0.9999  # each text's own vector, in input order


def test_released_working_memory_is_taken_again_with_the_same_vectors(onnx_model: OnnxEmbedder) -> None:
    long_texts = ["Drain the queue, then restart the worker and read its log. " * 40 for _ in range(4)]
    before = np.asarray(onnx_model.embed_documents(long_texts + TEXTS))
    release_work_memory(onnx_model)  # shrinks the arena the long batch grew
    release_work_memory(QueuedEmbedder(onnx_model))  # and through the wrappers the server uses
    after = np.asarray(onnx_model.embed_documents(long_texts + TEXTS))
    assert (before * after).sum(axis=1).min() > 0.9999


def test_a_model_never_loaded_has_nothing_to_release(tmp_path: Path) -> None:
    embedder = OnnxEmbedder(packaged_model_path(), tmp_path / "onnx", model_id=PACKAGED_MODEL_ID)
    release_work_memory(embedder)
    assert not (tmp_path / "onnx").exists()  # releasing did not load (and so export) the model
