"""Write-time resolution as a team meets it: pairs of facts, and facts of one template.

The set (``bench/resolution/``) holds:

- ``pairs.jsonl``: two memories each (``older``, ``newer``: a title and a text, as an agent writes
  them) and how the second relates to the first: ``contradicts`` (right: ``superseded``),
  ``compatible`` (right: ``stored`` or ``merged``), ``unrelated`` (right: ``stored``) or
  ``duplicate`` (right: ``reinforced`` or ``merged``). Each pair is written in a scope of its own.
- ``templates.json``: sets of facts written from one template about different subjects (the owner
  of each service, the port of each, the region of each cluster, who is on call on which day),
  mostly under one title. Each set is written in a scope of its own; right is every fact stored as
  its own memory, none folded into another and none marking another no longer valid.

Everything goes through the service's memorize with the settings given (so
``HIVEMEM_RESOLUTION_NEIGHBOURS=0`` measures resolution off). Reported: pairs right, the outcome of
each label, the contradictions folded (merged or reinforced: the miss that loses a fact), each
template set's outcomes, and memorize latency.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.data_files import json_lines, reading
from bench.suite.variants import latency_ms
from hivemem.answers import MemorizeResult
from hivemem.config import Settings
from hivemem.model import RelationType
from hivemem.schemas import MemoryCreate
from workers.lifecycle_tuning import LifecycleTuning

__all__ = ["RIGHT", "run_resolution"]

RIGHT: dict[str, frozenset[str]] = {
    "contradicts": frozenset({"superseded"}),
    "compatible": frozenset({"stored", "merged"}),
    "unrelated": frozenset({"stored"}),
    "duplicate": frozenset({"reinforced", "merged"}),
}
_FOLDS = frozenset({"merged", "reinforced"})


def _pairs(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle, reading(path, "a resolution pair set (JSON lines)"):
        pairs = list(json_lines(handle))
        for pair in pairs:
            if pair["label"] not in RIGHT:
                raise ValueError(f"unknown label {pair['label']!r} (one of {', '.join(RIGHT)})")
            MemoryCreate(**pair["older"]), MemoryCreate(**pair["newer"])
    return pairs


def _templates(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle, reading(path, "a template set file (JSON)"):
        sets: list[dict[str, Any]] = json.load(handle)
        for template in sets:
            str(template["name"]), [MemoryCreate(**m) for m in template["memories"]]
    return sets


class _Writer:
    """Memorize with the bench's caller, one scope per case, timing each call."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.seconds: list[float] = []

    def write(self, scope: str, memory: dict[str, str]) -> MemorizeResult:
        began = time.perf_counter()
        result = self.service.memorize(MemoryCreate(**memory, scope=scope), Caller(principal="bench"))
        self.seconds.append(time.perf_counter() - began)
        assert isinstance(result, MemorizeResult)
        return result


def _run_pairs(writer: _Writer, pairs: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes: dict[str, Counter[str]] = {label: Counter() for label in RIGHT}
    linked: Counter[str] = Counter()
    misses: list[dict[str, str]] = []
    for number, pair in enumerate(pairs):
        scope = f"bench/pairs/{number}"
        older = writer.write(scope, pair["older"]).id
        newer = writer.write(scope, pair["newer"])
        outcome = newer.outcome.value
        outcomes[pair["label"]][outcome] += 1
        if outcome == "stored" and _linked_similar(writer, newer.id, older):
            linked[pair["label"]] += 1
        if outcome not in RIGHT[pair["label"]]:
            misses.append(
                {
                    "label": pair["label"],
                    "outcome": outcome,
                    "older": pair["older"]["title"],
                    "newer": pair["newer"]["title"],
                }
            )
    right = len(pairs) - len(misses)
    return {
        "pairs": len(pairs),
        "right": right,
        "accuracy": round(right / (len(pairs) or 1), 4),
        "contradictions_folded": sum(outcomes["contradicts"][o] for o in _FOLDS),
        "by_label": {label: dict(sorted(counts.items())) for label, counts in outcomes.items() if counts},
        # Pairs stored apart and linked `similar` (the graph recall walks), by label: right for
        # related facts, noise between unrelated ones.
        "linked_similar": {label: linked[label] for label in RIGHT if outcomes[label]},
        "misses": misses,
    }


def _linked_similar(writer: _Writer, newer: str, older: str) -> bool:
    return any(
        relation.type is RelationType.SIMILAR and {relation.source_id, relation.target_id} == {newer, older}
        for relation in writer.service.store.relations(newer)
    )


def _run_templates(writer: _Writer, sets: list[dict[str, Any]]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for number, template in enumerate(sets):
        scope = f"bench/templates/{number}"
        results = [writer.write(scope, memory) for memory in template["memories"]]
        kept = {r.id for r in results}
        report[template["name"]] = {
            "memories": len(results),
            "outcomes": dict(sorted(Counter(r.outcome.value for r in results).items())),
            "folded": len(results) - len(kept),
            "invalidated": sum(1 for i in kept if writer.service.store.get(i).valid_to is not None),
            "examples": [r.said for r in results if r.outcome.value != "stored"][:3],
        }
    return report


def _rates(report: dict[str, Any]) -> dict[str, Any]:
    """The two figures resolution answers for: distinct facts it hid, contradictions it caught."""
    distinct = sum(t["memories"] for t in report["templates"].values())
    contradictions = report["by_label"].get("contradicts", {})
    said = sum(contradictions.values())
    return {
        "false_resolution": round(report["templates_folded"] / (distinct or 1), 4),
        "distinct_facts": distinct,
        "contradiction_recall": round(contradictions.get("superseded", 0) / (said or 1), 4),
        "contradictions": said,
    }


def _store_url(folder: str, opensearch: str | None) -> str:
    if opensearch is None:
        return f"sqlite:///{Path(folder) / 'bench.db'}"
    return f"{opensearch.rstrip('/')}/?index=bench-resolution-{os.getpid()}-{int(time.time())}"


def run_resolution(data: Path, settings: Settings, opensearch: str | None = None) -> dict[str, Any]:
    """Run the pairs and the template sets of ``data`` (a folder, see the module) on a new store
    built with ``settings`` (SQLite, or a fresh index of the OpenSearch cluster at ``opensearch``,
    dropped after), and return the report."""
    pairs, sets = _pairs(data / "pairs.jsonl"), _templates(data / "templates.json")
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-resolution-") as folder:
        run_settings = settings.model_copy(
            update={"store_url": _store_url(folder, opensearch), "data_dir": Path(folder), "broker_url": ""}
        )
        service = MemoryService.from_settings(run_settings)
        lifecycle = LifecycleTuning()
        bands = lifecycle.bands(service.embedder.model_id)
        try:
            writer = _Writer(service)
            report = {
                "resolution_neighbours": lifecycle.resolution_neighbours,
                "model": service.embedder.model_id,
                "contradiction_cosine": bands.same_subject,
                "reinforce_cosine": bands.same_fact,
                "link_cosine": bands.related,
                **_run_pairs(writer, pairs),
                "templates": _run_templates(writer, sets),
                "memorize": latency_ms(writer.seconds),
            }
        finally:
            if opensearch is not None:
                service.store.drop()
            service.close()
    report["templates_folded"] = sum(t["folded"] + t["invalidated"] for t in report["templates"].values())
    return {**_rates(report), "shape": "sqlite" if opensearch is None else "opensearch", **report}
