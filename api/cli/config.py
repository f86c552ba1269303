"""``hivemem config``: the effective settings, as JSON.

The operator settings in force (secrets redacted), the store they resolve to, and every tuning
parameter under the name the settings page gives it. Nothing is opened and no model is loaded.
"""

from __future__ import annotations

import argparse

from api.cli.memory import print_json
from hivemem.config import Settings, redact_url

__all__ = ["COMMANDS", "add_parser", "run"]

COMMANDS = ("config",)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``config`` to the ``hivemem`` subcommands."""
    sub.add_parser("config", help="print the effective settings")


def run(_: argparse.Namespace, settings: Settings) -> int:
    from api.settings_catalogue import refuse_invalid_tuning

    # `store_url` is empty by default: say which store that resolves to (the data folder's file).
    tuning = {name: value for group in refuse_invalid_tuning() for name, value in group.model_dump(mode="json").items()}
    print_json({"effective_store_url": redact_url(settings.resolved_store_url()), **settings.public_dict(), **tuning})
    return 0
