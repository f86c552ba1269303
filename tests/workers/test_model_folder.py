"""A derived model folder built once (workers/models/model_folder.py): cached by stamp, whole or absent,
one build when two ask at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from workers.models.model_folder import MARKER, built_folder


def _writer(calls: list[str]) -> Callable[[Path], None]:
    def write(staging: Path) -> None:
        calls.append(staging.name)
        (staging / "weights").write_text("w")

    return write


def test_built_once_per_stamp_and_again_when_it_changes(tmp_path: Path) -> None:
    calls: list[str] = []
    folder = built_folder(tmp_path / "model", "a", _writer(calls))
    assert (folder / "weights").read_text() == "w" and (folder / MARKER).read_text() == "a"
    built_folder(tmp_path / "model", "a", _writer(calls))
    assert len(calls) == 1
    built_folder(tmp_path / "model", "b", _writer(calls))
    assert len(calls) == 2 and (folder / MARKER).read_text() == "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]


def test_a_failed_build_leaves_nothing_and_keeps_the_old_folder(tmp_path: Path) -> None:
    built_folder(tmp_path / "model", "a", _writer([]))

    def broken(staging: Path) -> None:
        (staging / "half").write_text("h")
        raise ValueError("the source is damaged")

    with pytest.raises(ValueError, match="damaged"):
        built_folder(tmp_path / "model", "b", broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]
    assert (tmp_path / "model" / MARKER).read_text() == "a"


def test_two_asking_at_once_build_it_once(tmp_path: Path) -> None:
    calls: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def slow(staging: Path) -> None:
        inside.set()
        assert release.wait(30)
        _writer(calls)(staging)

    first = threading.Thread(target=built_folder, args=(tmp_path / "model", "a", slow))
    first.start()
    assert inside.wait(30)
    second_result: list[Path] = []
    second = threading.Thread(
        target=lambda: second_result.append(built_folder(tmp_path / "model", "a", _writer(calls)))
    )
    second.start()
    release.set()
    first.join(30)
    second.join(30)
    # However the two interleave, the second finds the first one's folder: one build.
    assert calls == [".model.partial"] and second_result == [tmp_path / "model"]
