"""The core is pure: importing hivemem loads no framework, driver or model library."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
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
    # Backends implement search.base; search.recall sits above them and uses them.
    for backend in ("search/sqlite", "search/opensearch"):
        offenders = {f for f, names in _imports(backend).items() if any(n.startswith("search.recall") for n in names)}
        assert offenders == set(), offenders


def test_the_opensearch_driver_is_imported_by_its_package_only() -> None:
    for package in ("hivemem", "search", "api", "workers"):
        offenders = {
            f
            for f, names in _imports(package).items()
            if any(n.split(".")[0] == "opensearchpy" for n in names) and not f.startswith("search/opensearch/")
        }
        assert offenders == set(), offenders
