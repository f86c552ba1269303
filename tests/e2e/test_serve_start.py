"""``hivemem serve`` says what it loads from its first moment, each step with its time."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from api.cli import main as cli_main
from tests.e2e.helpers import HivememServer


def test_the_first_line_comes_before_the_servers_own_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The server's modules (FastAPI, the MCP SDK, the model runtime) take a second or more to import:
    # the first line is printed before any of them is, so a start is never silent. Shown by making
    # the import fail: the line is there all the same.
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setitem(sys.modules, "api.main", None)
    with pytest.raises(ImportError):
        cli_main(["serve"])
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"hivemem: starting: store sqlite:///{tmp_path / 'data'}/hivemem.db, model ")


def test_each_step_of_a_start_is_said_with_its_time(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    server = HivememServer(tmp_path / "data", tmp_path / "logs")
    server.start()
    server.stop()
    lines = [line for line in server.log_text().splitlines() if line.startswith("hivemem")]
    steps = [re.sub(r"\(\d+\.\d s\)$", "(T)", line) for line in lines[:4]]
    assert steps[0].startswith("hivemem: starting: store ")
    assert steps[1:] == [
        "hivemem: server loaded; opening the store and the model (T)",
        "hivemem: store open, model hash-64 loaded; loading the store's index (T)",
        "hivemem: index loaded (T)",
    ]
    assert re.search(r"^hivemem serving on .*; ready in \d+\.\d s$", lines[4])
