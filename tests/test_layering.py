"""The core is pure: importing hivemem loads no framework, driver or model library."""

from __future__ import annotations

import json
import subprocess
import sys

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
