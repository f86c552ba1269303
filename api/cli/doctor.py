"""``hivemem doctor``: check what hivemem needs, one line each, and say how to fix what fails.

Doctor makes nothing: a data folder or SQLite file that is not there yet is reported as such (the
first start makes it). The tuning parameters (each known, each in its bounds), the data folder
(there and writable), the embedding model (loads, embeds, and whether deduplication has its own
cosine bands or borrows MiniLM's), the store (opens with that model, answers), the second model
when one is configured (loads, embeds, and how many memories still lack its vector), the broker
when one is configured (answers a ping), the token key's permissions, and the client hooks of the
project folder (``--project``, default here): which are installed, and whether the server they
call answers them. Exit status 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hivemem.config import Settings, redact_url
from hivemem.errors import HivememError
from hivemem.wording import counted

__all__ = ["COMMANDS", "Check", "add_parser", "checks", "run"]

COMMANDS = ("doctor",)


@dataclass(frozen=True, slots=True)
class Check:
    """One check's outcome: what was checked, whether it passed, what was found or how to fix it."""

    name: str
    ok: bool
    says: str


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``doctor`` to the ``hivemem`` subcommands."""
    doctor = sub.add_parser(
        "doctor", help="check the tuning, data folder, model, store, broker, key and hooks; say how to fix what fails"
    )
    doctor.add_argument(
        "--project", type=Path, default=None, help="the project folder whose client hooks to check (default: here)"
    )


def _tuning() -> Check:
    """The tuning parameters, from the environment and the config file: each is one hivemem has, in
    its bounds. Every process and store command refuses to start otherwise."""
    from api.settings_catalogue import refuse_invalid_tuning

    try:
        groups = refuse_invalid_tuning()
    except HivememError as exc:
        return Check("tuning", False, f"{exc}; docs/settings.md gives each parameter's bounds")
    count = sum(len(type(group).model_fields) for group in groups)
    return Check("tuning", True, f"{count} parameters, each in its bounds")


def _data_folder(settings: Settings) -> Check:
    """The data folder is there and writable, or can be made: doctor makes nothing itself."""
    folder = settings.data_dir.expanduser()
    if not folder.exists():
        parent = next((p for p in folder.parents if p.exists()), None)
        if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            return Check(
                "data folder",
                False,
                f"{folder} does not exist and cannot be made; set HIVEMEM_DATA_DIR to a writable folder",
            )
        return Check("data folder", True, f"{folder} does not exist yet; `hivemem serve` (or setup) makes it")
    try:
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return Check(
            "data folder", False, f"{folder}: {exc.strerror or exc}; set HIVEMEM_DATA_DIR to a writable folder"
        )
    return Check("data folder", True, f"{folder} is writable")


def _store_not_made_yet(url: str) -> bool:
    """Whether the store is a SQLite file that is not there: opening it would make it."""
    from search import sqlite_path

    if not url.startswith("sqlite:"):
        return False
    path = sqlite_path(url)
    return path != ":memory:" and not Path(path).expanduser().exists()


def _model_and_store(settings: Settings) -> list[Check]:
    from search import open_store
    from workers.models.embed import load_embedder

    try:
        embedder = load_embedder(settings)
        dimension = len(embedder.embed_queries(["doctor"])[0])
    except Exception as exc:  # a model that cannot load fails in many ways; each is reported as is
        hint = "check HIVEMEM_EMBED_MODEL and that the embed extra is installed (pip install 'hivemem[embed]')"
        return [Check("model", False, f"{type(exc).__name__}: {exc}; {hint}")]
    from workers.lifecycle_tuning import LifecycleTuning

    # Borrowed bands work (nothing is lost), so the check passes and says how to measure them.
    borrowed = LifecycleTuning().borrowed_bands_warning(embedder.model_id)
    says = f"{embedder.model_id} embeds ({dimension} dimensions)" + (f"; but {borrowed}" if borrowed else "")
    found = [Check("model", True, says)]
    url = settings.resolved_store_url()
    if _store_not_made_yet(url):
        found.append(Check("store", True, f"{redact_url(url)} does not exist yet; the first start makes it"))
        return found
    try:
        store = open_store(url, embedding_model=embedder.model_id, dimension=dimension, settings=settings)
        try:
            store.check()
            count = store.count()
            second = _second_model(settings, store)
        finally:
            store.close()
    except HivememError as exc:
        found.append(Check("store", False, f"{redact_url(url)}: {exc}"))
    else:
        found.append(Check("store", True, f"{redact_url(url)} holds {counted(count, 'memory', 'memories')}"))
        found += [second] if second is not None else []
    return found


def _second_model(settings: Settings, store: object) -> Check | None:
    """With ``HIVEMEM_SECOND_EMBED_MODEL``: the second model loads and embeds, the store keeps its
    vectors, and how many memories are still without one."""
    if not settings.second_embed_model.strip():
        return None
    from search.capabilities import KeepsSecondVectors
    from workers.models.embed import load_embedder
    from workers.second_model import second_model_settings

    if not isinstance(store, KeepsSecondVectors):
        return Check(
            "second model",
            False,
            "this store keeps one vector per memory; the second dense leg needs a store that keeps a "
            "second model's vectors, as SQLite and OpenSearch do (unset HIVEMEM_SECOND_EMBED_MODEL)",
        )
    try:
        embedder = load_embedder(second_model_settings(settings))
        dimension = len(embedder.embed_queries(["doctor"])[0])
    except Exception as exc:  # as for the first model: each failure is reported as is
        return Check("second model", False, f"{type(exc).__name__}: {exc}; check HIVEMEM_SECOND_EMBED_MODEL")
    missing = store.second_vectors_remaining(embedder.model_id)
    return Check(
        "second model",
        True,
        f"{embedder.model_id} embeds ({dimension} dimensions); {counted(missing, 'memory', 'memories')} without "
        "its vector yet "
        "(a running server fills them)",
    )


def _broker(settings: Settings) -> Check | None:
    if not settings.broker_url:
        return None
    try:
        import redis
    except ImportError:
        return Check(
            "broker",
            False,
            f"{redact_url(settings.broker_url)} is set, but the Redis client is not installed: "
            "pip install 'hivemem[distributed]' (or unset HIVEMEM_BROKER_URL for the embedded shape)",
        )
    try:
        redis.Redis.from_url(settings.broker_url, socket_timeout=3, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure to reach the broker is the finding
        return Check(
            "broker", False, f"{redact_url(settings.broker_url)}: {exc}; start Redis or fix HIVEMEM_BROKER_URL"
        )
    return Check("broker", True, f"{redact_url(settings.broker_url)} answers")


def _token_key(settings: Settings) -> Check | None:
    path = settings.data_dir.expanduser() / "token.key"
    if settings.token_secret or not path.exists() or os.name == "nt":  # no owner-only mode bits there
        return None
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check("token key", False, f"{path} is readable by others (mode {mode:o}); chmod 600 {path}")
    return Check("token key", True, f"{path} is its owner's only")


def _hooks(project: Path) -> Check:
    """The hivemem hooks in the project's Claude Code settings, and whether their server answers."""
    from api.cli.project_files import installed_hook_events
    from api.hooks.command import probe
    from api.remote import RemoteError

    settings_file = project / ".claude" / "settings.json"
    installed = installed_hook_events(settings_file)
    if not installed:
        return Check("hooks", True, f"none in {settings_file} (`hivemem setup claude-code` installs them)")
    events = ", ".join(sorted(installed))
    try:
        urls = {probe(command, project) for command in installed.values()}
    except (RemoteError, ValueError) as exc:
        return Check("hooks", False, f"{events} installed, but they do not reach the server: {exc}")
    return Check("hooks", True, f"{events} installed in {settings_file}; {', '.join(sorted(urls))} answers them")


def checks(settings: Settings, project: Path | None = None) -> list[Check]:
    """Every check, in order; the model and store only once the data folder is usable."""
    folder = _data_folder(settings)
    found = [_tuning(), folder]
    if folder.ok:
        found += _model_and_store(settings)
    steps: list[Callable[[Settings], Check | None]] = [_broker, _token_key]
    found += [c for c in (step(settings) for step in steps) if c is not None]
    return [*found, _hooks((project or Path.cwd()).expanduser())]


def run(args: argparse.Namespace, settings: Settings) -> int:
    found = checks(settings, args.project)
    for check in found:
        print(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.says}")
    return 0 if all(c.ok for c in found) else 1
