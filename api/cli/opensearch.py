"""``hivemem opensearch setup``: create or update the OpenSearch templates, indices, aliases and pipelines.

Idempotent: run it at every deploy. ``--export DIR`` writes the JSON bodies instead (what
``deploy/opensearch/`` holds) without contacting a cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hivemem.config import Settings
from hivemem.errors import ConfigError

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("opensearch",)

# What an export writes when no model is named: the packaged default embedder.
DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIMENSION = 384


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``opensearch setup`` to the ``hivemem`` subcommands."""
    opensearch = sub.add_parser("opensearch", help="manage the OpenSearch store")
    commands = opensearch.add_subparsers(dest="opensearch", required=True)
    setup = commands.add_parser(
        "setup", help="create/update the index templates, the versioned indices + aliases and the search pipelines"
    )
    setup.add_argument("--url", default=None, help="opensearch+http(s):// URL (default: HIVEMEM_STORE_URL)")
    setup.add_argument("--model", default=None, help="embedding model id (default: the configured embedder's)")
    setup.add_argument("--dimension", type=int, default=None, help="vector dimension (default: the embedder's)")
    setup.add_argument("--export", type=Path, default=None, metavar="DIR", help="write the JSON bodies to DIR instead")


def _model(args: argparse.Namespace, settings: Settings, *, export: bool) -> tuple[str, int]:
    if args.model is not None and args.dimension is not None:
        return str(args.model), int(args.dimension)
    if export and args.model is None and args.dimension is None and not settings.embed_model:
        return DEFAULT_MODEL_ID, DEFAULT_DIMENSION
    if (args.model is None) != (args.dimension is None):
        raise ConfigError("give both --model and --dimension, or neither (then the configured embedder is loaded)")
    from workers.models.embed import load_embedder

    embedder = load_embedder(settings)
    return embedder.model_id, embedder.dimension


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run ``hivemem opensearch setup``; returns the exit status (1 if any object failed)."""
    from search.opensearch.bodies import IndexNames, IndexOptions
    from search.opensearch.client import make_client, parse_url
    from search.opensearch.setup import ensure, exported_files

    options = IndexOptions.of()
    if args.export is not None:
        model, dimension = _model(args, settings, export=True)
        args.export.mkdir(parents=True, exist_ok=True)
        for name, body in exported_files(
            IndexNames(settings.opensearch_index), options, embedding_model=model, dimension=dimension
        ).items():
            (args.export / name).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {args.export / name}")
        return 0
    url = args.url or settings.store_url
    if not url.startswith("opensearch+"):
        raise ConfigError("set HIVEMEM_STORE_URL (or --url) to an opensearch+http(s):// URL")
    target = parse_url(url)
    model, dimension = _model(args, settings, export=False)
    client = make_client(target, settings)
    try:
        report = ensure(
            client,
            target,
            IndexNames(target.index or settings.opensearch_index),
            options,
            embedding_model=model,
            dimension=dimension,
            update=True,
            pipelines=True,
        )
    finally:
        client.close()
    print(report.render())
    if report.skipped:
        print(
            "The search pipelines were skipped: they serve HIVEMEM_OPENSEARCH_HYBRID=native only. Keep the default "
            "HIVEMEM_OPENSEARCH_HYBRID=core, which fuses BM25 and k-NN in hivemem as on SQLite.",
            file=sys.stderr,
        )
    if report.failed:
        print(
            f"{len(report.failed)} object(s) failed. Search pipelines need the neural-search plugin; without them "
            "keep HIVEMEM_OPENSEARCH_HYBRID=core (the default), which needs none.",
            file=sys.stderr,
        )
        return 1
    return 0
