"""Build the small-store set from architecture decision records of public projects.

Each project is one scope; each decision record one memory (its title, and its Decision section,
or the Proposal where a record has no Decision). Two questions per record, both taken from the
record's own text by a fixed rule, never written for the set:

- ``paraphrased``: the opening of its Context section, the problem told in other words than the
  decision (the question a teammate would ask before knowing the answer);
- ``exact``: "what did we decide about <title>?", naming the subject's own terms.

Usage: ``python bench/smallstore/build.py OUT.jsonl REPO_DIR=SCOPE:PATH_PREFIX...`` where each
REPO_DIR is a git checkout (read at HEAD). The records used are in bench/smallstore/README.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

_HEADING = re.compile(r"^#{1,3}\s+(.*)$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MAX_CONTENT = 1200
_MAX_QUESTION = 220


def _sections(text: str) -> tuple[str, dict[str, str]]:
    title, current = "", ""
    sections: dict[str, str] = {}
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            name = match.group(1).strip()
            if not title:
                title = name
            current = name.lower()
            sections.setdefault(current, "")
            continue
        if current:
            sections[current] += line + "\n"
    return title, sections


def _plain(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"[`*_>]", "", text)
    return " ".join(text.split())


def _first_sentences(text: str, limit: int) -> str:
    out = ""
    for sentence in re.split(r"(?<=[.?!])\s+", text):
        if out and len(out) + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
    return out[:limit]


def _clean_title(title: str) -> str:
    title = re.sub(r"^(ADR[- ]?)?\d+[.:]?\s*", "", title, flags=re.IGNORECASE)
    return title.strip(" -:")


def records(repo: Path, prefix: str) -> list[dict[str, str]]:
    listed = subprocess.run(
        # No prefix: the records are at the top of the repository.
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", *([prefix] if prefix else [])],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    found = []
    for path in sorted(listed):
        if not path.endswith(".md") or re.search(r"template|readme|index", path, re.IGNORECASE):
            continue
        text = subprocess.run(
            ["git", "-C", str(repo), "show", f"HEAD:{path}"], check=True, capture_output=True, text=True
        ).stdout
        title, sections = _sections(text)
        decision = next((sections[k] for k in sections if k.startswith(("decision", "proposal"))), "")
        context = next((sections[k] for k in sections if k.startswith(("context", "problem"))), "")
        decision, context, title = _plain(decision), _plain(context), _clean_title(title)
        if len(decision) < 40 or len(context) < 40 or not title:
            continue
        found.append({"path": path, "title": title, "content": decision[:_MAX_CONTENT], "context": context})
    return found


def main(out: Path, sources: list[str]) -> None:
    lines = []
    # One numbering per scope: a project whose records are in two folders has two sources.
    numbered: dict[str, int] = {}
    for source in sources:
        repo, _, where = source.partition("=")
        scope, _, prefix = where.partition(":")
        for record in records(Path(repo), prefix):
            memory_id = f"{scope}#{numbered.setdefault(scope, 0)}"
            numbered[scope] += 1
            lines.append(
                {
                    "kind": "memory",
                    "id": memory_id,
                    "scope": scope,
                    "title": record["title"],
                    "content": record["content"],
                    "source": record["path"],
                }
            )
            lines.append(
                {
                    "kind": "question",
                    "scope": scope,
                    "answer": memory_id,
                    "style": "paraphrased",
                    "query": _first_sentences(record["context"], _MAX_QUESTION),
                }
            )
            lines.append(
                {
                    "kind": "question",
                    "scope": scope,
                    "answer": memory_id,
                    "style": "exact",
                    "query": f"what did we decide about {record['title'].lower()}?",
                }
            )
    out.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
