"""The token key and this machine's token are written readable by their owner only, whole or not at all."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from api.private_file import keep_first_private, replace_private


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_replace_writes_an_owner_only_file_and_replaces_what_was_there(tmp_path: Path) -> None:
    path = tmp_path / "folder" / "local.token"  # the folder is made
    replace_private(path, "first")
    replace_private(path, "second")
    assert path.read_text() == "second"
    assert _mode(path) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["local.token"]  # no staging file is left


def test_the_first_of_racing_writers_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "token.key"
    texts = [f"{n:064x}" for n in range(16)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda text: keep_first_private(path, text), texts))
    assert path.read_text() in texts
    kept = path.read_text()
    keep_first_private(path, "f" * 64)
    assert path.read_text() == kept  # never overwritten
    assert _mode(path) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["token.key"]
