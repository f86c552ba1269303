"""The small-store set: its builder, the committed set, and `hivemem bench smallstore` on a tiny one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from api.cli import main

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "bench" / "smallstore" / "adr.jsonl"

# A decision record in the shape build.py reads: a title, a Context and a Decision section.
RECORD = """# {n}. {title}

## Context

{context}

## Decision

{decision}
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _repo_with_two_folders(tmp_path: Path) -> Path:
    """One project whose decision records are in two folders (as log4brains keeps them)."""
    repo = tmp_path / "project"
    for folder, titles in (("docs/adr", ["Use Postgres", "Use Redis for queues"]), ("web/adr", ["Use Vite"])):
        (repo / folder).mkdir(parents=True)
        for n, title in enumerate(titles, start=1):
            text = RECORD.format(
                n=n,
                title=title,
                context=f"We needed to choose how to handle the part that {title.lower()} addresses, and why.",
                decision=f"We will {title.lower()}, because it is what the team knows best and it is supported.",
            )
            (repo / folder / f"{n:04d}-{title.lower().replace(' ', '-')}.md").write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "records")
    return repo


def test_the_builder_numbers_records_once_per_scope_across_folders(tmp_path: Path) -> None:
    repo, out = _repo_with_two_folders(tmp_path), tmp_path / "set.jsonl"
    build = ROOT / "bench" / "smallstore" / "build.py"
    sources = [f"{repo}=example/project:docs/adr", f"{repo}=example/project:web/adr"]
    subprocess.run([sys.executable, str(build), str(out), *sources], check=True)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [line["id"] for line in lines if line["kind"] == "memory"]
    assert ids == ["example/project#0", "example/project#1", "example/project#2"]
    assert {line["answer"] for line in lines if line["kind"] == "question"} == set(ids)


def test_an_empty_path_reads_the_records_of_the_whole_repository(tmp_path: Path) -> None:
    repo, out = _repo_with_two_folders(tmp_path), tmp_path / "set.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "smallstore" / "build.py"), str(out), f"{repo}=p:"], check=True
    )
    sources = [json.loads(line)["source"] for line in out.read_text().splitlines() if '"memory"' in line]
    assert sorted(sources) == [
        "docs/adr/0001-use-postgres.md",
        "docs/adr/0002-use-redis-for-queues.md",
        "web/adr/0001-use-vite.md",
    ]


@pytest.mark.parametrize(("name", "records"), [("adr.jsonl", 68), ("adr-more.jsonl", 98)])
def test_the_committed_sets_name_each_record_once_and_answer_in_its_scope(name: str, records: int) -> None:
    lines = [json.loads(line) for line in (SET.parent / name).read_text(encoding="utf-8").splitlines()]
    memories = {line["id"]: line["scope"] for line in lines if line["kind"] == "memory"}
    assert len(memories) == sum(line["kind"] == "memory" for line in lines) == records
    questions = [line for line in lines if line["kind"] == "question"]
    assert len(questions) == 2 * records
    assert all(memories[q["answer"]] == q["scope"] for q in questions)


def small_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A set built from one folder of the tiny project (4 questions), with the bench's data folder
    and the hash embedder set."""
    repo, data = _repo_with_two_folders(tmp_path), tmp_path / "set.jsonl"
    build = ROOT / "bench" / "smallstore" / "build.py"
    subprocess.run([sys.executable, str(build), str(data), f"{repo}=example/project:docs/adr"], check=True)
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    return data


def test_smallstore_bench_reports_each_style(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = small_set(tmp_path, monkeypatch), tmp_path / "report.json"
    assert main(["bench", "smallstore", "--data", str(data), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["questions"] == 4 and set(report["by_style"]) == {"exact", "paraphrased"}
    assert all(report["by_style"][style]["questions"] == 2 for style in ("exact", "paraphrased"))
    assert 0.0 <= report["hit@1"] <= report["hit@3"] <= report["hit@5"] <= 1.0
    assert (report["set"], report["mode"]) == ("set.jsonl", "hybrid")
