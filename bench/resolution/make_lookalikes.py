"""Build the look-alike sets of the resolution bench from reference text that others wrote.

Reference documentation is where facts look most alike and are most distinct: every entry of a
configuration manual opens the same way, every line of a port table has the same shape. Each set
below is one such reference, written into one scope; right is every entry stored as itself. The
``changed`` pairs are the other direction: a documented setting said again with another value,
which must supersede.

Sources (Debian packages, installed by ``apt-get install postgresql-doc-15 netbase redis-server bash-doc``;
nothing of them is committed):

- the PostgreSQL 15 manual's configuration chapters (``runtime-config-*.html``): each parameter's
  first paragraph, titled by its name, and again all under one title with the name at the head;
- ``/etc/services``: the port and protocol of each service, with its comment;
- ``/etc/redis/redis.conf``: each directive's comment block;
- the OpenSearch REST API specification's query parameters (``--api-spec``), one per description;
- the Bash manual's shopt options and shell variables (``bash-doc``), set aside while the rules
  were written and run once after;
- and, not others' text, the numbered runbook lines of the issue that found the fault (1,000).

Usage: ``python -m bench.resolution.make_lookalikes OUT [--api-spec DIR]`` writes ``OUT/templates.json``
(the look-alike sets) and ``OUT/pairs.jsonl`` (the changed settings), the format of
``bench/resolution/`` (see ``bench/suite/resolution.py``).
"""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path
from typing import Any

__all__ = ["main"]

POSTGRES_HTML = Path("/usr/share/doc/postgresql-doc-15/html")
SERVICES = Path("/etc/services")
REDIS_CONF = Path("/etc/redis/redis.conf")
_PER_SET = 400  # entries of one reference at most: a scope a team fills in its first months
_PARAMETER = re.compile(
    r'<dt id="GUC-[^"]+"><span class="term"><code class="varname">([^<]+)</code>\s*\(<code class="type">([^<]+)'
    r"</code>\).*?</dt><dd><p>(.*?)</p>",
    re.S,
)
_DEFAULT = re.compile(r"The default (?:value )?is (on|off|\d+)(\s?(?:ms|s|min|kB|MB|GB)?)\b")


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _postgres_parameters() -> list[tuple[str, str, str]]:
    found: dict[str, tuple[str, str, str]] = {}
    for page in sorted(POSTGRES_HTML.glob("runtime-config-*.html")):
        for name, kind, paragraph in _PARAMETER.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, (name, kind, _text(paragraph)))
    return list(found.values())


def _services() -> list[dict[str, str]]:
    memories = []
    for line in SERVICES.read_text(encoding="utf-8").splitlines():
        entry, _, comment = line.partition("#")
        fields = entry.split()
        if len(fields) < 2:
            continue
        name, port = fields[0], fields[1]
        aliases = f" (also {', '.join(fields[2:])})" if len(fields) > 2 else ""
        said = f" {comment.strip()}." if comment.strip() else ""
        memories.append({"title": f"Port of {name}", "content": f"{name}{aliases} uses port {port}.{said}"})
    return memories


def _redis_directives() -> list[dict[str, str]]:
    """Each block of the file (blank lines apart) that explains a directive and shows it."""
    conf = REDIS_CONF.read_text(encoding="utf-8")
    # A directive is a name the file sets somewhere, or a hyphenated one it shows commented out;
    # other "word value" lines at the end of a block are the prose's last line.
    set_here = set(re.findall(r"^([a-z][a-z-]+) \S", conf, re.M))
    memories, titled = [], set()
    for block in re.split(r"\n\s*\n", conf):
        lines = [line.strip() for line in block.splitlines() if line.strip() not in ("", "#")]
        shown: list[tuple[str, str]] = []
        while lines and (example := re.fullmatch(r"#?\s?([a-z][a-z-]+) ([^\s.]\S*(?: \S+){0,2})", lines[-1])):
            if example.group(1) not in set_here and "-" not in example.group(1):
                break
            shown.insert(0, (example.group(1), example.group(2)))  # the directive lines that close a block show it
            lines.pop()
        prose = [line[2:] for line in lines if line.startswith("# ")]
        text = " ".join(prose)
        if shown and len(text) > 40 and shown[0][0] not in titled:
            name, value = shown[0]
            titled.add(name)
            memories.append({"title": f"redis.conf {name}", "content": f"{text[:700]} Example: {name} {value}"})
    return memories


def _api_parameters(spec: Path) -> list[dict[str, str]]:
    import yaml  # the spec is YAML; PyYAML comes with the dev extra

    memories, seen = [], set()
    for namespace in sorted((spec / "spec" / "namespaces").glob("*.yaml")):
        parameters = (yaml.safe_load(namespace.read_text(encoding="utf-8")) or {}).get("components", {})
        for key, parameter in sorted(parameters.get("parameters", {}).items()):
            description = " ".join(str(parameter.get("description") or "").split())
            if parameter.get("in") != "query" or len(description) < 30 or description in seen:
                continue
            seen.add(description)
            operation = key.split("::")[0]
            memories.append(
                {
                    "title": f"{operation} parameter {parameter['name']}",
                    "content": f"The {parameter['name']} query parameter of {operation}: {description}",
                }
            )
    return memories


BASH_MANUAL = Path("/usr/share/doc/bash/bashref.html")


def _bash_entries() -> list[dict[str, str]]:
    """The Bash manual's shopt options and shell variables, each its first paragraph. Added after
    the rules were written, to see them on text they were not tuned on."""
    manual = BASH_MANUAL.read_text(encoding="utf-8")
    options = manual[manual.find('id="The-Shopt-Builtin"') :]
    variables = manual[manual.find('id="Bash-Variables"') :]
    found = [
        ("Bash option", name, paragraph)
        for name, paragraph in re.findall(
            r"<dt><span><code[^>]*>([a-z_]+)</code>.*?</dt>\s*<dd><p>(.*?)</p>", options[:80_000], re.S
        )
    ] + [
        ("Bash variable", name, paragraph)
        for name, paragraph in re.findall(
            r"<dt id='index-[^']+'><span><code>([A-Z_0-9]+)</code>.*?</dt>\s*<dd><p>(.*?)</p>",
            variables[:200_000],
            re.S,
        )
    ]
    return [{"title": f"{kind} {name}", "content": _text(paragraph)} for kind, name, paragraph in found]


def _runbook() -> list[dict[str, str]]:
    """The issue's runbook lines (not others' text: its report's own repro), 10 rounds of 100 items."""
    return [
        {
            "title": f"Round {r} item {i}",
            "content": f"Round {r} item {i}: service {i} restarts with the drain-first procedure.",
        }
        for r in range(1, 11)
        for i in range(1, 101)
    ]


def _changed(parameters: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """A documented default said again with another value: a flipped switch, a doubled number."""
    pairs = []
    for name, kind, paragraph in parameters:
        match = _DEFAULT.search(paragraph)
        if not match:
            continue
        value, unit = match.group(1), match.group(2)
        other = {"on": "off", "off": "on"}.get(value) or str(int(value) * 2 if int(value) else 1)
        changed = paragraph[: match.start(1)] + other + paragraph[match.end(1) :]
        pairs.append(
            {
                "label": "contradicts",
                "older": {"title": f"{name} ({kind})", "content": paragraph},
                "newer": {"title": f"{name} ({kind})", "content": changed},
                "changed": f"{value}{unit} -> {other}{unit}",
            }
        )
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--api-spec", type=Path, default=None, help="the opensearch-api-specification checkout")
    args = parser.parse_args()
    parameters = _postgres_parameters()
    sets = [
        {
            "name": "postgresql parameters, titled by name",
            "memories": [{"title": f"{n} ({k})", "content": p} for n, k, p in parameters][:_PER_SET],
        },
        {
            "name": "postgresql parameters, one title",
            "memories": [{"title": "PostgreSQL setting", "content": f"{n} ({k}): {p}"} for n, k, p in parameters][
                :_PER_SET
            ],
        },
        {"name": "service ports (/etc/services)", "memories": _services()[:_PER_SET]},
        {"name": "redis.conf directives", "memories": _redis_directives()[:_PER_SET]},
    ]
    sets.append({"name": "numbered runbook (the issue's repro)", "memories": _runbook()})
    sets.append({"name": "bash options and variables (held aside)", "memories": _bash_entries()[:_PER_SET]})
    if args.api_spec is not None:
        sets.append({"name": "opensearch api query parameters", "memories": _api_parameters(args.api_spec)[:_PER_SET]})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "templates.json").write_text(json.dumps(sets, indent=1, ensure_ascii=False), encoding="utf-8")
    with (args.out / "pairs.jsonl").open("w", encoding="utf-8") as handle:
        for pair in _changed(parameters):
            handle.write(json.dumps(pair, ensure_ascii=False) + "\n")
    for template in sets:
        print(f"{len(template['memories']):5d}  {template['name']}")
    changed = len((args.out / "pairs.jsonl").read_text(encoding="utf-8").splitlines())
    print(f"{changed:5d}  changed settings (pairs.jsonl)")


if __name__ == "__main__":
    main()
