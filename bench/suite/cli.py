"""The ``hivemem bench`` commands: their parser and their dispatch to each benchmark.

Loaded by the product's CLI (``api/cli/__init__.py``) when the suite is there, that is from a clone of
the repository; the names, flags and JSON reports are those the benchmarks have always had."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api.cli.serving import positive_int
from hivemem.config import Settings
from hivemem.model import FusionMethod, RetrievalMode

__all__ = ["add_parser", "run"]


def _at_least_101(text: str) -> int:
    """An argparse type: a whole number of at least 101 (the bench's graph step reads the 1st, 11th, …
    91st memory, each with an edge to the next)."""
    value = positive_int(text)
    if value < 101:
        raise argparse.ArgumentTypeError(f"must be at least 101, got {value}")
    return value


def _int_list(text: str) -> list[int]:
    """An argparse type: a comma list of whole numbers of at least 1."""
    return [positive_int(part.strip()) for part in text.split(",") if part.strip()]


def _layers_by_hidden(text: str) -> tuple[int, int]:
    """An argparse type: a model's size as ``LAYERSxHIDDEN`` (``24x1024``); the hidden size a
    multiple of 64, as BERT's attention heads are."""
    layers, sep, hidden = text.lower().partition("x")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected LAYERSxHIDDEN such as 24x1024, got {text!r}")
    size = (positive_int(layers), positive_int(hidden))
    if size[1] % 64:
        raise argparse.ArgumentTypeError(f"the hidden size must be a multiple of 64, got {size[1]}")
    return size


def add_parser(sub: Any) -> None:
    """Add ``bench`` and its subcommands to the CLI's subparsers ``sub``."""
    bench = sub.add_parser("bench", help="benchmarks over the real store and recall path")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    _add_quality(bench_sub)
    _add_store_and_client(bench_sub)
    _add_load(bench_sub)
    _add_models_and_requests(bench_sub)
    for each in bench_sub.choices.values():
        each.add_argument("--json", dest="json_out", type=Path, default=None, help="also write the report here")


def _add_quality(bench_sub: Any) -> None:
    """Retrieval quality on a data set: locomo, scifact, smallstore."""
    for name, data_help in (
        ("locomo", "LoCoMo JSON file"),
        ("scifact", "SciFact folder (corpus.jsonl, queries.jsonl)"),
        ("smallstore", "small-store set (JSON lines, e.g. bench/smallstore/adr.jsonl)"),
    ):
        b = bench_sub.add_parser(name, help=f"retrieval quality on {name} (a real benchmark's data)")
        b.add_argument("--data", type=Path, required=True, help=data_help)
        if name == "scifact":
            b.add_argument("--qrels", type=Path, default=None, help="qrels TSV (default DATA/qrels/train.tsv)")
        elif name == "locomo":
            b.add_argument(
                "--as-facts", action="store_true", help="memorize the turns as facts an agent noted, not conversation"
            )
        b.add_argument(
            "--mode",
            choices=[m.value for m in RetrievalMode],
            default=RetrievalMode.HYBRID.value,
            help="which recall legs run (default hybrid)",
        )
        b.add_argument("--fusion", choices=[f.value for f in FusionMethod], default=None, help="default: the setting")
        b.add_argument("--fresh", action="store_true", help="rebuild the bench database")
        b.add_argument(
            "--variant",
            dest="variants",
            action="append",
            default=[],
            metavar="NAME[:SETTING=VALUE,...]",
            help="run the questions once more with these settings changed (e.g. e5:rerank_model=e5-small); "
            "repeat it for a comparison table",
        )

    cmp = bench_sub.add_parser(
        "compare", help="two reports of one quality bench, question by question: gained, lost, sign test"
    )
    cmp.add_argument("base", type=Path, help="the report to compare against (--json of a quality bench)")
    cmp.add_argument("other", type=Path, help="the report of the other run, on the same questions")
    cmp.add_argument(
        "--metric", dest="metrics", action="append", default=[], help="a metric (repeatable; default: all)"
    )


def _add_store_and_client(bench_sub: Any) -> None:
    """The CLI, the dashboard, the store at scale, resolution, knowledge."""
    cl = bench_sub.add_parser("cli", help="CLI calls end to end (process start included), through a server and alone")
    cl.add_argument("--runs", type=positive_int, default=20, help="hivemem remember calls through the server")
    hk = bench_sub.add_parser("hooks", help="each client hook end to end (process start included) on a full store")
    hk.add_argument("--data", type=Path, required=True, help="folder holding scifact/ (corpus.jsonl, queries.jsonl)")
    hk.add_argument("--size", type=positive_int, default=10_000, help="memories in the store (default 10000)")
    hk.add_argument("--runs", type=positive_int, default=100, help="calls of each hook (default 100)")
    ui = bench_sub.add_parser("ui", help="dashboard pages in Chromium on a large store: first paint, data shown")
    ui.add_argument("--data", type=Path, required=True, help="folder holding scifact/ (corpus.jsonl: the texts)")
    ui.add_argument("--size", type=positive_int, default=100_000, help="memories in the store (default 100000)")
    ui.add_argument("--scopes", type=positive_int, default=100, help="scopes they are spread over (default 100)")
    ui.add_argument("--runs", type=positive_int, default=10, help="loads of each page (default 10)")
    sc = bench_sub.add_parser("scale", help="recall cost against store size: 10k to 1M memories, 1 and 100 scopes")
    sc.add_argument("--data", type=Path, required=True, help="folder holding scifact/ (corpus.jsonl, queries.jsonl)")
    sc.add_argument("--sizes", type=_int_list, default=[10_000, 100_000, 1_000_000], help="comma list of sizes")
    sc.add_argument("--layouts", type=_int_list, default=[1, 100], help="comma list of scope counts")
    sc.add_argument("--real", type=positive_int, default=20_000, help="texts embedded by the model")
    sc.add_argument("--queries", type=positive_int, default=200, help="recall queries per measurement")
    se = bench_sub.add_parser("secrets", help="the write-time secret detector: precision, recall, scan time")
    se.add_argument("--data", type=Path, default=Path("bench/secrets/cases.jsonl"), help="the cases (JSON lines)")
    se.add_argument("--prose", type=Path, default=None, help="a real text to time the scan on (e.g. a manual)")
    rs = bench_sub.add_parser(
        "resolution", help="write-time resolution on labelled pairs of facts and on facts of one template"
    )
    rs.add_argument("--data", type=Path, default=Path("bench/resolution"), help="folder: pairs.jsonl, templates.json")
    rs.add_argument(
        "--opensearch", default=None, help="a cluster (opensearch+http://…): write to a fresh index there, not SQLite"
    )
    cb = bench_sub.add_parser("cosine-bands", help="MiniLM's resolution cosine bands mapped onto another model's")
    cb.add_argument("--model", required=True, help="the model to map them onto, e.g. bge-small-en-v1.5")
    cb.add_argument(
        "--data",
        type=Path,
        action="append",
        default=None,
        help="a resolution set folder (repeatable; default: bench/resolution)",
    )
    cb.add_argument("--per-set", type=positive_int, default=60, help="facts drawn from each template set")
    ms = bench_sub.add_parser("model-switch", help="an existing store switched to another model: re-embed, then recall")
    ms.add_argument("--data", type=Path, default=Path("bench/smallstore/adr.jsonl"), help="a small-store set")
    ms.add_argument("--to", required=True, help="the model to switch to, e.g. bge-small-en-v1.5")
    kn = bench_sub.add_parser("knowledge", help="ingest a folder of real documents, then ask questions of it")
    kn.add_argument("--corpus", type=Path, required=True, help="folder of documents")
    kn.add_argument(
        "--questions",
        dest="questions_file",
        metavar="QUESTIONS",
        type=Path,
        required=True,
        help="JSONL: question, evidence [strings], format",
    )
    kn.add_argument("--shape", choices=["embedded", "celery"], default="embedded", help="where the ingest runs")
    kn.add_argument("--workers", type=positive_int, default=2, help="Celery workers (celery shape)")


def _add_load(bench_sub: Any) -> None:
    """Load over HTTP and while workers ingest."""
    hl = bench_sub.add_parser("http-load", help="a real server over HTTP: mixed load, and recall during an upload")
    hl.add_argument(
        "--document", type=Path, default=None, help="the document to upload (e.g. 5 MB of text); none: no upload"
    )
    hl.add_argument(
        "--rounds", type=positive_int, default=1, help="mixed-load rounds in a row, the first right after the seed"
    )
    hl.add_argument("--memories", type=positive_int, default=5000, help="memories the server holds")
    hl.add_argument("--clients", type=positive_int, default=16, help="clients of the mixed load")
    hl.add_argument("--calls", type=positive_int, default=2000, help="calls of the mixed load")
    hl.add_argument("--upload-clients", type=positive_int, default=8, help="recall clients around the upload")
    hl.add_argument("--max-chunks", type=positive_int, default=None, help="HIVEMEM_KNOWLEDGE_MAX_CHUNKS")
    hl.add_argument(
        "--opensearch",
        default=None,
        metavar="URL",
        help="also run the mixed load on a server storing in this cluster (opensearch+http://…), same run",
    )
    hl.add_argument("--embed-model", default="", help="the servers' HIVEMEM_EMBED_MODEL (default: the default model)")
    hl.add_argument(
        "--no-resolution",
        dest="no_resolution",
        action="store_true",
        help="the servers store without resolving writes by meaning (HIVEMEM_RESOLUTION_NEIGHBOURS=0): a quick seed",
    )
    il = bench_sub.add_parser("ingest-load", help="recall latency while Celery workers ingest a folder")
    il.add_argument("--corpus", type=Path, required=True, help="folder of documents")
    il.add_argument("--workers", type=positive_int, default=2, help="Celery ingest workers")
    il.add_argument("--clients", type=positive_int, default=8, help="concurrent recall clients")
    il.add_argument("--nice", type=int, choices=range(0, 20), default=0, metavar="0-19", help="the workers' niceness")


def _add_models_and_requests(bench_sub: Any) -> None:
    """The embedder, the rerank pool, OpenSearch requests, throughput."""
    em = bench_sub.add_parser("embed", help="the embedder alone on each device: texts/s, query latency, agreement")
    em.add_argument("--data", type=Path, required=True, help="folder holding locomo/ and/or scifact/ (the texts)")
    em.add_argument(
        "--device", dest="devices", choices=["cpu", "cuda"], action="append", help="repeatable (default cpu)"
    )
    em.add_argument("--batch-sizes", type=_int_list, default=[], help="comma list (default: the setting)")
    em.add_argument("--texts", type=positive_int, default=2000, help="texts of each set embedded (default 2000)")
    em.add_argument("--queries", type=positive_int, default=100, help="queries embedded one at a time (default 100)")
    em.add_argument(
        "--warmup", type=positive_int, default=32, help="texts of each set embedded before timing (default 32)"
    )
    rp = bench_sub.add_parser(
        "rerank-pool", help="the rerank pool's round trip (gateway -> worker -> gateway) against scoring in process"
    )
    rp.add_argument("--data", type=Path, required=True, help="folder holding locomo/ and/or scifact/ (the passages)")
    rp_model = rp.add_mutually_exclusive_group()
    rp_model.add_argument(
        "--model", default=None, help="cross:PATH or bi:MODEL (default: a MiniLM-L6-shaped cross-encoder, untrained)"
    )
    rp_model.add_argument(
        "--shape",
        type=_layers_by_hidden,
        default=None,
        metavar="LAYERSxHIDDEN",
        help="instead of --model: an untrained cross-encoder of this size (24x1024: bge-reranker-v2-m3's)",
    )
    rp.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both score (default cpu)")
    rp.add_argument("--top-n", type=positive_int, default=30, help="passages per request (default 30)")
    rp.add_argument("--requests", type=positive_int, default=100, help="requests per data set (default 100)")
    rp.add_argument(
        "--warmup", type=positive_int, default=5, help="requests before measuring (default 5; a GPU wants ~50)"
    )
    osr = bench_sub.add_parser(
        "opensearch-requests",
        help="requests and refresh waits of the OpenSearch store's batch paths (import, export, …)",
    )
    osr.add_argument(
        "--url", default=None, help="store URL of a cluster, opensearch+http(s)://… (default: a private osmem-server)"
    )
    osr.add_argument("--memories", type=_at_least_101, default=3000, help="memories written (default 3000)")
    t = bench_sub.add_parser("throughput", help="memorize/s and recall latency, embedded and Celery + Redis")
    t.add_argument("--shape", choices=["embedded", "celery"], action="append", help="default: both")
    t.add_argument("--workers", type=positive_int, action="append", help="Celery workers (repeatable; default 1 and 2)")
    t.add_argument("--memories", type=positive_int, default=300, help="single memorize calls")
    t.add_argument("--bulk", type=positive_int, default=1000, help="memories in the bulk memorize")
    t.add_argument("--queries", type=positive_int, default=300, help="recall calls")
    t.add_argument("--clients", type=positive_int, default=8, help="concurrent callers")


class _Refused(Exception):
    """A benchmark's input is not what it needs: said on one line, exit status 2."""


Bench = Callable[[argparse.Namespace, Settings], dict[str, Any]]


def _flags_by_name(runner: str, *, existing: tuple[str, ...] = ()) -> Bench:
    """The bench ``runner`` (``module:function``, imported when it runs) called with the flags its
    parameters name, and ``settings`` where it takes them; refused first when a flag in ``existing``
    names a path that does not exist."""
    module, _, function = runner.partition(":")

    def bench(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
        given = vars(args) | {"settings": settings}
        for flag in existing:
            if not given[flag].exists():
                raise _Refused(f"{given[flag]} does not exist")
        run = getattr(importlib.import_module(module), function)
        report: dict[str, Any] = run(
            **{name: given[name] for name in inspect.signature(run).parameters if name in given}
        )
        return report

    return bench


def _throughput(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    from bench.suite.throughput import run_throughput

    runs = [
        run_throughput(
            settings,
            shape=shape,
            workers=workers,
            memories=args.memories,
            bulk=args.bulk,
            queries=args.queries,
            clients=args.clients,
        )
        for shape in args.shape or ["embedded", "celery"]
        for workers in ((args.workers or [1, 2]) if shape == "celery" else [0])
    ]
    return {"bench": "throughput", "runs": runs}


def _ingest_load(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    if not args.corpus.is_dir():
        raise _Refused(f"{args.corpus} is not a folder")
    return _flags_by_name("bench.suite.ingest_load:run_ingest_load")(args, settings)


def _opensearch_requests(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    try:
        return _flags_by_name("bench.suite.opensearch_requests:run_opensearch_requests")(args, settings)
    except RuntimeError as exc:
        raise _Refused(str(exc)) from exc


def _cosine_bands(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    args.data = args.data or [Path("bench/resolution")]
    missing = [str(folder) for folder in args.data if not (folder / "pairs.jsonl").is_file()]
    if missing:
        raise _Refused(f"--data {', '.join(missing)}: no pairs.jsonl there")
    return _flags_by_name("bench.suite.cosine_bands:run_cosine_bands")(args, settings)


def _embed(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    # --device appends to a list; its default (cpu) is said here, or a given device would add to it.
    args.devices = args.devices or ["cpu"]
    return _flags_by_name("bench.suite.embed:run_embed")(args, settings)


def _quality(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """The retrieval-quality benches (locomo, smallstore, scifact): one data set, variants."""
    from bench.suite.locomo import run_locomo
    from bench.suite.scifact import run_scifact
    from bench.suite.smallstore import run_smallstore
    from bench.suite.variants import parse_variant
    from search.recall_params import RecallParams

    if not args.data.exists():
        raise _Refused(f"--data {args.data} does not exist")
    common: dict[str, Any] = {
        "mode": RetrievalMode(args.mode),
        "fusion": FusionMethod(args.fusion) if args.fusion else RecallParams().fusion,
        "fresh": args.fresh,
        "variants": [parse_variant(spec) for spec in args.variants],
    }
    if args.bench == "locomo":
        return run_locomo(args.data, settings, as_facts=args.as_facts, **common)
    if args.bench == "smallstore":
        return run_smallstore(args.data, settings, **common)
    return run_scifact(args.data, settings, qrels=args.qrels, **common)


def _compare(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """Two quality reports paired by question (:mod:`bench.suite.paired`)."""
    from bench.suite.paired import as_rows, compare_reports

    reports = []
    for path in (args.base, args.other):
        try:
            reports.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise _Refused(f"{path}: not a readable report ({exc})") from exc
    try:
        differences = compare_reports(reports[0], reports[1], args.metrics)
    except ValueError as exc:
        raise _Refused(str(exc)) from exc
    for difference in differences:
        print(difference.line(), file=sys.stderr)
    return {"bench": "compare", "base": str(args.base), "other": str(args.other), "differences": as_rows(differences)}


_BENCHES: dict[str, Bench] = {
    "throughput": _throughput,
    "cli": _flags_by_name("bench.suite.cli_latency:run_cli_latency"),
    "hooks": _flags_by_name("bench.suite.hooks:run_hooks_bench"),
    "ui": _flags_by_name("bench.suite.dashboard:run_dashboard_bench"),
    "scale": _flags_by_name("bench.suite.scale:run_scale"),
    "http-load": _flags_by_name("bench.suite.http_load:run_http_load"),
    "ingest-load": _ingest_load,
    "opensearch-requests": _opensearch_requests,
    "embed": _embed,
    "rerank-pool": _flags_by_name("bench.suite.rerank_pool:run_rerank_pool"),
    "resolution": _flags_by_name("bench.suite.resolution:run_resolution"),
    "cosine-bands": _cosine_bands,
    "model-switch": _flags_by_name("bench.suite.model_switch:run_model_switch", existing=("data",)),
    "secrets": _flags_by_name("bench.suite.secrets:run_secrets_bench", existing=("data",)),
    "knowledge": _flags_by_name("bench.suite.knowledge:run_knowledge", existing=("corpus", "questions_file")),
    "locomo": _quality,
    "smallstore": _quality,
    "scifact": _quality,
    "compare": _compare,
}


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the benchmark ``args`` names and write its report (stdout, and ``--json``); the exit status."""
    from bench.suite.harness import emit

    try:
        report = _BENCHES[args.bench](args, settings)
    except _Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    emit(report, args.json_out)
    if "table" in report and getattr(args, "variants", None):
        print(report["table"], file=sys.stderr)  # the variants side by side, for a reader
    return 0
