"""The house stays readable: no function over 80 lines and no module over 600 outside the tests.

The benchmarks count: they are code a newcomer reads too, only kept out of the product wheel."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("hivemem", "api", "workers", "search", "bench")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def _modules() -> list[Path]:
    return sorted(path for package in SOURCE for path in (ROOT / package).rglob("*.py"))


def test_no_function_is_over_eighty_lines() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({size} lines)")
    assert long == []


def test_no_module_is_over_six_hundred_lines() -> None:
    sizes = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8").count("\n") for path in _modules()}
    assert {name: size for name, size in sizes.items() if size > MAX_MODULE_LINES} == {}
