"""The key of a bench's cached vectors: everything that decides what the vectors are."""

from __future__ import annotations

from hivemem.config import Settings
from hivemem.embedding import Embedder
from workers.models.embed import vectors_made_by
from workers.models.embed_tuning import EmbedTuning

__all__ = ["vectors_key"]


def vectors_key(settings: Settings, embedder: Embedder) -> str:
    """The model (and its weights), the token window a memory or query is read through, and the
    passage prefix. A cache keyed by less would serve a run asking for a 512-token window the
    vectors of a 256-token one."""
    return f"{vectors_made_by(embedder)}:w{EmbedTuning().embed_max_length}:{settings.passage_prefix}"
