"""``hivemem bench ui``: how fast the dashboard paints, and shows its data, on a large store.

A store of ``size`` memories spread over ``scopes`` scopes is written straight through the store's
batched write path (the SciFact sentences; vectors by the model-free hash embedder, as the
dashboard's cost is the API's reads, not the model's), ``hivemem serve`` opens it, and the system's
Chromium, driven by Playwright, loads each page ``runs`` times in a fresh tab: the scopes page
(where the dashboard opens), a scope's memory list, a memory's page with its graph and history, and
a search with the score explanations. Per page, by the browser's own clock from navigation start:
the first contentful paint, and the moment the page's data is on screen.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.suite.cli_latency import wait_ready
from bench.suite.local_cluster import free_port, hivemem_command
from bench.suite.metrics import percentile
from bench.suite.scale import bench_memory, load_texts
from hivemem.errors import ConfigError

__all__ = ["chromium_binary", "run_dashboard_bench"]

_DIMENSION = 384
_WRITE_CHUNK = 2_000
_SCOPE_PREFIX = "bench/ui"
# Each page, and what on it says that its data arrived.
_PAGES = {
    "scopes": ("#/", "table tbody tr"),
    "memory list": ("#/memories?scope={scope}", "table tbody tr"),
    "memory page": ("#/memory/{memory}?scope={scope}", "svg.graph"),
    "search": ("#/search?q=vitamin+D+deficiency+in+older+adults&scope={scope}", "article.result details.explain"),
}


def _build(db: Path, texts: list[tuple[str, str]], size: int, scopes: int) -> float:
    """Write ``size`` memories into a new store at ``db``; the seconds it took."""
    from hivemem.embedding import HashEmbedder
    from hivemem.model import WriteOutcome, embedding_text
    from hivemem.resolution import Resolution
    from search import open_store

    embedder = HashEmbedder(_DIMENSION)
    store = open_store(f"sqlite:///{db}", embedding_model=embedder.model_id, dimension=_DIMENSION)
    began = time.perf_counter()
    now = datetime.now(UTC)
    try:
        for chunk in range(0, size, _WRITE_CHUNK):
            scoped = ((i, f"{_SCOPE_PREFIX}/{i % scopes}") for i in range(chunk, min(chunk + _WRITE_CHUNK, size)))
            memories = [bench_memory(i, texts, scope, now, embedder.model_id) for i, scope in scoped]
            vectors = embedder.embed_passages([embedding_text(m.title, m.content) for m in memories])
            for memory, vector in zip(memories, vectors, strict=True):
                memory.embedding = vector
            store.write_resolved_many(memories, lambda incoming, _held: Resolution(WriteOutcome.STORED, incoming))
    finally:
        store.close()
    return time.perf_counter() - began


def chromium_binary() -> str | None:
    """The system's Chromium (or Chrome) on the PATH, or None: no browser is ever downloaded."""
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


def _chromium() -> str:
    found = chromium_binary()
    if found is None:
        raise ConfigError("no Chromium on this machine: apt-get install chromium")
    return found


def _page_timings(url: str, ready_selector: str, runs: int) -> dict[str, Any]:
    """Load ``url`` ``runs`` times in fresh tabs; first contentful paint and data-on-screen times."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise ConfigError("hivemem bench ui needs playwright (pip install -e '.[dev]')") from exc

    paints, ready = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        try:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1366, "height": 860})
                page = context.new_page()
                page.goto(url, wait_until="commit")
                shown = page.wait_for_function(
                    "selector => document.querySelector(selector) && performance.now()", arg=ready_selector,
                    timeout=120_000, polling="raf",
                )  # fmt: skip
                ready.append(float(shown.json_value()))
                paint = page.evaluate(
                    "performance.getEntriesByName('first-contentful-paint').map(e => e.startTime)[0] ?? null"
                )
                if paint is not None:
                    paints.append(float(paint))
                context.close()
        finally:
            browser.close()
    return {"first_paint_ms": _summary(paints), "data_shown_ms": _summary(ready)}


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 0.95), 1)}


def run_dashboard_bench(
    *,
    data: Path,
    size: int,
    scopes: int,
    runs: int,
    progress: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> dict[str, Any]:
    """Build the store, start a server on it, and time each dashboard page; the report as a dict."""
    texts = load_texts(data, min(size, 20_000))
    folder = Path(tempfile.mkdtemp(prefix="hivemem-bench-ui-"))
    try:
        progress(f"ui: writing {size} memories over {scopes} scopes")
        build_s = _build(folder / "hivemem.db", texts, size, scopes)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
        env |= {"HIVEMEM_DATA_DIR": str(folder), "HIVEMEM_EMBED_MODEL": f"hash:{_DIMENSION}"}
        serve = [*hivemem_command(), "serve", "--port", str(port)]
        server = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            began = time.perf_counter()
            wait_ready(url, server)
            progress(f"ui: server ready in {time.perf_counter() - began:.1f} s")
            scope = f"{_SCOPE_PREFIX}/0"
            with httpx.Client(base_url=url, timeout=60) as http:
                # A memory with edges to five others, so its page has a graph and a history to draw.
                edges = [
                    {"target_id": str(uuid.UUID(int=1 + scopes * k)), "relationship_type": "related_to"}
                    for k in range(1, 6)
                ]
                note = {"title": "Bench hub", "content": "Links five memories of this scope.", "scope": scope}
                made = http.post("/v1/memories", json=note | {"related_to": edges})
                made.raise_for_status()
                memory = made.json()["id"]
            pages = {}
            for name, (fragment, selector) in _PAGES.items():
                progress(f"ui: {name}")
                target = f"{url}/ui{fragment.format(scope=scope, memory=memory)}"
                pages[name] = _page_timings(target, selector, runs)
        finally:
            server.terminate()
            server.wait(timeout=60)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "bench": "ui",
        "memories": size,
        "scopes": scopes,
        "build_s": round(build_s, 1),
        "runs": runs,
        "pages": pages,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "date": datetime.now(UTC).date().isoformat(),
    }
