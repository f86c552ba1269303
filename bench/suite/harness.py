"""What every benchmark shares: a service on a bench database, built once per corpus and model."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import astuple
from pathlib import Path
from typing import Any

from api.services.caller import Caller
from api.services.memories import MemoryService
from bench.suite.vectors_key import vectors_key
from hivemem.config import Settings
from hivemem.model import FusionMethod, RetrievalMode
from hivemem.schemas import MemoryCreate
from search.sqlite.schema import SCHEMA_VERSION
from workers.lifecycle_tuning import LifecycleTuning
from workers.models.embed import load_embedder

__all__ = ["BenchCorpus", "bench_service", "emit"]

BenchCorpus = Sequence[tuple[str, MemoryCreate]]


def _fingerprint(corpus: BenchCorpus, model_id: str) -> str:
    digest = hashlib.sha256(model_id.encode())
    for scope, request in corpus:
        digest.update(scope.encode())
        digest.update(request.model_dump_json().encode())
    return digest.hexdigest()[:16]


def bench_service(
    name: str,
    corpus: BenchCorpus,
    settings: Settings,
    *,
    mode: RetrievalMode,
    fusion: FusionMethod,
    fresh: bool = False,
    progress: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> tuple[MemoryService, dict[tuple[str, int], str]]:
    """A service whose store holds ``corpus``; returns it and a map (scope, corpus index) -> memory id.

    The bench database lives under ``DATA_DIR/bench`` named by a hash of the corpus and what makes
    its vectors (:func:`vectors_key`), so running every mode and fusion re-embeds nothing; ``fresh`` rebuilds it.
    With an OpenSearch ``store_url`` (``HIVEMEM_STORE_URL=opensearch+http://…``) the same corpus goes to
    an index of that cluster named the same way, for the same questions on the distributed shape.
    """
    embedder = load_embedder(settings)
    folder = settings.data_dir.expanduser() / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    # The store's schema version is part of the key: an upgrade rebuilds instead of failing. So is
    # the write-time resolution, which decides what the store holds.
    lifecycle = LifecycleTuning()
    bands = lifecycle.bands(embedder.model_id)
    resolution = ":".join(str(v) for v in (lifecycle.resolution_neighbours, *astuple(bands)))
    key = _fingerprint(corpus, f"{vectors_key(settings, embedder)}:{SCHEMA_VERSION}:{resolution}")
    db = folder / f"{name}-{key}.db"
    on_opensearch = settings.store_url.startswith("opensearch+")
    ids_file = db.with_suffix(".opensearch.ids.json" if on_opensearch else ".ids.json")
    if fresh or not ids_file.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        ids_file.unlink(missing_ok=True)
    if on_opensearch:
        store_url = f"{settings.store_url.split('/?', 1)[0].rstrip('/')}/?index=bench-{name}-{key.lower()}"
    else:
        store_url = f"sqlite:///{db}"
    service = MemoryService.from_settings(settings.model_copy(update={"store_url": store_url}), embedder=embedder)
    if on_opensearch and ids_file.exists() and service.store.count() == 0:
        ids_file.unlink()  # the cluster lost the index (a node started afresh): seed it again
    elif on_opensearch and not ids_file.exists():
        service.store.drop()  # what a run that died half-way left there
        service.close()
        service = MemoryService.from_settings(settings.model_copy(update={"store_url": store_url}), embedder=embedder)
    service.recaller.params = service.recaller.params.model_copy(update={"fusion": fusion, "retrieval_mode": mode})
    if ids_file.exists():
        raw: list[list[Any]] = json.loads(ids_file.read_text())
        _second_leg_filled(service, progress)
        return service, {(scope, int(index)): memory_id for scope, index, memory_id in raw}
    ids: dict[tuple[str, int], str] = {}
    by_scope: dict[str, list[tuple[int, MemoryCreate]]] = {}
    for index, (scope, request) in enumerate(corpus):
        by_scope.setdefault(scope, []).append((index, request))
    done = 0
    for scope, items in by_scope.items():
        for start in range(0, len(items), 256):
            chunk = items[start : start + 256]
            results = service.memorize_many([r for _, r in chunk], Caller(principal="bench", default_scope=scope))
            for (index, _), result in zip(chunk, results, strict=True):
                ids[(scope, index)] = result.id
            done += len(chunk)
            progress(f"  memorized {done}/{len(corpus)}")
    ids_file.write_text(json.dumps([[s, i, m] for (s, i), m in ids.items()]))
    _second_leg_filled(service, progress)
    return service, ids


def _second_leg_filled(service: MemoryService, progress: Callable[[str], None]) -> None:
    """With a second dense leg, its vectors of every memory before any question is asked (kept in
    the bench database, so a later run embeds only what it lacks)."""
    leg = service.second_leg
    if leg is None:
        return
    service.parts.start_second_leg()
    while not leg.wait_caught_up(30.0):
        if leg.last_failure:
            raise RuntimeError(f"the second model's vectors could not be made: {leg.last_failure}")
        progress(f"  second model ({leg.model}): {leg.remaining()} memories to embed")


def emit(report: dict[str, Any], json_out: Path | None) -> None:
    """Print the report as JSON and write it to ``json_out`` when given."""
    text = json.dumps(report, indent=2, sort_keys=False)
    print(text)
    if json_out is not None:
        json_out.write_text(text + "\n")
