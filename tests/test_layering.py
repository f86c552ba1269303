"""The floors of the house, by what each module imports.

The core is pure: importing hivemem loads no framework, driver or model library. Above it, each
floor imports only its own and the ones below: ``hivemem`` (0) → ``search`` (1) → ``workers`` (2)
→ ``api`` (3); and no modules import each other in a cycle. Every import counts, those inside
functions and under ``TYPE_CHECKING`` too: a late import is still a dependency.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import hivemem

FORBIDDEN = [
    "fastapi",
    "starlette",
    "celery",
    "torch",
    "transformers",
    "opensearchpy",
    "sqlite3",
    "mcp",
    "uvicorn",
]
INNER = ["api", "search", "workers"]


def test_importing_the_core_loads_no_framework() -> None:
    code = (
        "import json, sys, importlib, pkgutil, hivemem\n"
        "for m in pkgutil.iter_modules(hivemem.__path__): importlib.import_module('hivemem.' + m.name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = set(json.loads(out))
    offenders = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN + INNER)
    assert offenders == []


def test_public_names_are_exported() -> None:
    for name in hivemem.__all__:
        assert hasattr(hivemem, name), name
    assert {"Memory", "Settings", "HivememError", "minmax_fuse", "rrf_fuse", "derive_scope"} <= set(hivemem.__all__)


def _imports(package: str) -> dict[str, set[str]]:
    """Every module a package's files import, by file (read from the source, nothing is run)."""
    root = Path(__file__).resolve().parents[1]
    found: dict[str, set[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        found[str(path.relative_to(root))] = names
    return found


def test_no_backend_imports_the_read_path() -> None:
    # Backends implement search.base; search.recall sits above them and uses them. Recall's tuning
    # (search.recall_params) is data: the OpenSearch pipelines repeat its fusion arithmetic.
    def reads_the_path(name: str) -> bool:
        return name.startswith("search.recall") and not name.startswith("search.recall_params")

    for backend in ("search/sqlite", "search/opensearch"):
        offenders = {f for f, names in _imports(backend).items() if any(reads_the_path(n) for n in names)}
        assert offenders == set(), offenders


def test_the_opensearch_driver_is_imported_by_its_package_only() -> None:
    for package in ("hivemem", "search", "api", "workers"):
        offenders = {
            f
            for f, names in _imports(package).items()
            if any(n.split(".")[0] == "opensearchpy" for n in names) and not f.startswith("search/opensearch/")
        }
        assert offenders == set(), offenders


FLOORS = {"hivemem": 0, "search": 1, "workers": 2, "api": 3}
ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    """Every module of the four packages, by its dotted name (a package by its own)."""
    found: dict[str, Path] = {}
    for package in FLOORS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The modules of the four packages that ``module`` imports, wherever the import stands."""

    def owner(name: str) -> str | None:  # the module a dotted name lives in
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        return ".".join(parts) or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import submodule` depends on the submodule; a name defined in the
            # package's __init__ on the package.
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = owner(name)
            if target and target != module:
                yield target


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {module: set(_imported(module, path, known)) for module, path in known.items()}


def test_no_module_imports_a_floor_above_its_own() -> None:
    def floor(module: str) -> int:
        return FLOORS[module.split(".")[0]]

    upward = sorted((m, t) for m, targets in _graph().items() for t in targets if floor(t) > floor(m))
    assert upward == []


def test_model_runtimes_and_document_readers_import_no_job_plumbing() -> None:
    # workers/ has three rooms: the jobs (its top level), the model runtimes and the document
    # readers they call. The two below know nothing of jobs, runners or brokers.
    rooms = ("workers.models", "workers.documents")

    def plumbing(target: str) -> bool:
        return target.startswith("workers") and not target.startswith(rooms) and target != "workers"

    leaks = sorted((m, t) for m, targets in _graph().items() if m.startswith(rooms) for t in targets if plumbing(t))
    assert leaks == []


def test_no_modules_import_each_other_in_a_cycle() -> None:
    graph = _graph()
    # Tarjan's strongly connected components, iteratively: a component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            step = next(targets, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == []


def test_the_import_reader_sees_late_and_type_only_imports(tmp_path: Path) -> None:
    # The reader the floors rely on: an import inside a function or under TYPE_CHECKING counts.
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from api.services.memories import MemoryService\n"
        "def late():\n    from workers.runner import InProcessRunner\n"
        "from search import sqlite\n"
    )
    known = _modules()
    assert set(_imported("hivemem.probe", source, known)) == {
        "api.services.memories",
        "workers.runner",
        "search.sqlite",
    }


def test_the_exception_tree_drawn_in_the_errors_module_names_every_class() -> None:
    from hivemem import errors

    classes = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.HivememError) and value.__module__ == errors.__name__
    }
    drawn = set(re.findall(r"(?:──|^)\s*(\w+(?:Error|Required|Refused|Denied|Attempts))\b", errors.__doc__ or "", re.M))
    assert drawn == classes
    assert set(errors.__all__) >= classes - {"HivememError"}
