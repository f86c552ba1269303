"""A model's cosine bands, mapped from MiniLM's: the cosine below which the same share of pairs of
one scope's facts lies under that model as below MiniLM's band under MiniLM.

The pairs come from resolution sets (``pairs.jsonl``, ``templates.json``: each ``--data`` folder):
each labelled pair, every pair of facts within a template set (at most ``per_set`` facts drawn
from each), and as many pairs drawn across all facts (unrelated, mostly): what the resolver meets
among a scope's neighbours. Each fact is embedded as a memory is (title and content, as a passage)
by MiniLM and by ``model``. Reported: for each of MiniLM's bands, the share of pairs under it and
``model``'s cosine at that share; and the median cosine of the pairs by label. The bands of
:mod:`hivemem.cosine_bands` started from these and were checked with ``hivemem bench resolution``.
The query floor (``query_related``) is a query's cosine to a memory, not a pair of memories: it is
not mapped here (bench/RESULTS.md says how it was).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from bench.suite.data_files import json_lines, reading
from hivemem.config import Settings
from hivemem.cosine_bands import MINILM_BANDS, bands_for
from hivemem.model import embedding_text
from workers.models.embed import load_embedder

__all__ = ["run_cosine_bands"]

_MINILM = "all-MiniLM-L6-v2"
_SEED = 7


class _Texts:
    """The facts to embed, each once, and the pairs of them to score."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}
        self.pairs: list[tuple[int, int]] = []
        self.labels: list[str] = []

    def of(self, memory: dict[str, str]) -> int:
        text = embedding_text(memory["title"], memory["content"])
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]

    def pair(self, a: int, b: int, label: str) -> None:
        if a != b:
            self.pairs.append((a, b))
            self.labels.append(label)


def _collect(folders: Sequence[Path], per_set: int, drawn: random.Random) -> _Texts:
    found = _Texts()
    for folder in folders:
        with (folder / "pairs.jsonl").open(encoding="utf-8") as handle, reading(folder / "pairs.jsonl", "pairs"):
            for pair in json_lines(handle):
                found.pair(found.of(pair["older"]), found.of(pair["newer"]), str(pair["label"]))
        with (folder / "templates.json").open(encoding="utf-8") as handle, reading(folder, "template sets"):
            for template in json.load(handle):
                memories = template["memories"]
                chosen = drawn.sample(memories, per_set) if len(memories) > per_set else memories
                ids = [found.of(m) for m in chosen]
                for i, a in enumerate(ids):
                    for b in ids[i + 1 :]:
                        found.pair(a, b, "one template")
    across = len(found.pairs)
    for _ in range(across):
        found.pair(drawn.randrange(len(found.texts)), drawn.randrange(len(found.texts)), "drawn across")
    return found


def _cosines(model: str, settings: Settings, found: _Texts) -> tuple[str, np.ndarray]:
    """The model's id, and the cosine of each pair under it."""
    embedder = load_embedder(settings.model_copy(update={"embed_model": model}))
    vectors = np.asarray(embedder.embed_passages(found.texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    left, right = np.array([a for a, _ in found.pairs]), np.array([b for _, b in found.pairs])
    cosines: np.ndarray = (vectors[left] * vectors[right]).sum(axis=1)
    return embedder.model_id, cosines


def run_cosine_bands(data: list[Path], settings: Settings, model: str, per_set: int = 60) -> dict[str, Any]:
    """Map MiniLM's bands onto ``model``'s cosines over the pairs of ``data`` (see the module)."""
    found = _collect(data, per_set, random.Random(_SEED))
    _, base = _cosines(_MINILM, settings, found)
    embedder_id, other = _cosines(model, settings, found)
    mapped = {}
    for band in fields(MINILM_BANDS):
        if band.name == "query_related":
            continue  # a query's cosine to a memory: not a pair of memories (see the module)
        at = float(getattr(MINILM_BANDS, band.name))
        share = float((base < at).mean())
        mapped[band.name] = {
            "minilm": at,
            "share_below": round(share, 4),
            "mapped": round(float(np.quantile(other, share)), 3),
        }
    labels = np.array(found.labels)
    medians = {
        label: {
            "minilm": round(float(np.median(base[labels == label])), 3),
            model: round(float(np.median(other[labels == label])), 3),
        }
        for label in sorted(set(found.labels))
    }
    return {
        "model": model,
        "texts": len(found.texts),
        "pairs": len(found.pairs),
        "bands_mapped": mapped,
        "bands_in_use": {band.name: getattr(bands_for(embedder_id), band.name) for band in fields(MINILM_BANDS)},
        "median_by_label": medians,
    }
