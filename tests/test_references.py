"""Names that docstrings, comments and docs pages point at still exist.

A docstring that sends the reader to :class:`search.base.ReEmbeds` after the class moved to
``search.capabilities`` says something that is no longer true, and nothing runs it to notice. This
test reads every reference to one of the house's own names: Sphinx roles in the code
(``:class:`X```, ``:func:`X```, ``:meth:`X```, ...), and dotted names in backticks in the code, the
READMEs and docs/. Each must resolve to a module, a module-level name, or a member of a class
(methods, fields, class attributes, attributes its methods set on ``self``). An unqualified name
resolves in the module that names it, or as a member of one of its classes. A file path in
backticks on those pages must exist, every ``HIVEMEM_*`` variable named anywhere is one that
hivemem reads, and every ``hivemem`` command line is one the CLI takes (command, subcommand,
options).

The index of names is read from the source with ``ast``; the checks of variables and
commands import the settings classes and the CLI's parser.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("hivemem", "api", "workers", "search", "bench", "tests")
ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj):`~?([A-Za-z_][\w.]*)`")
REPO_PATH = re.compile(r"`((?:hivemem|api|workers|search|bench|tests|docs|deploy|scripts|\.ci)/[\w./-]*)`")
DOTTED = re.compile(r"`{1,2}((?:" + "|".join(PACKAGES) + r")\.[A-Za-z_][\w.]*?)(?:\(\))?`")


# Bases from outside the house that give a subclass no member a docstring would point at.
_MEMBERLESS_BASES = frozenset({"Protocol", "Generic", "ABC", "object", "NamedTuple", "TypedDict", "Enum", "StrEnum"})


@dataclass
class Namespace:
    """What one module or class defines: its names, and for the classes among them their members."""

    module: str  # where it is defined: a class's bases, as written, are names of this module
    names: dict[str, str | None] = field(default_factory=dict)  # name -> what an import points at, else None
    classes: dict[str, Namespace] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)  # a class's bases, as written


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.stmt) -> list[str]:
    """The names a module- or class-level assignment binds (``a, b = ...`` binds two)."""
    if not isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return []
    written = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name.id for target in written for name in ast.walk(target) if isinstance(name, ast.Name)]


def _on_self(attribute: ast.Attribute) -> bool:
    return isinstance(attribute.value, ast.Name) and attribute.value.id == "self"


def _fill(space: Namespace, body: list[ast.stmt], in_class: bool) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            space.names[node.name] = None
            if in_class:  # attributes a method sets on self are the instance's
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) and _on_self(inner):
                        space.names[inner.attr] = None
        elif isinstance(node, ast.ClassDef):
            inner_space = Namespace(space.module, bases=[ast.unparse(base) for base in node.bases])
            _fill(inner_space, node.body, in_class=True)
            space.names[node.name] = None
            space.classes[node.name] = inner_space
        elif isinstance(node, ast.Import):
            for alias in node.names:
                space.names[(alias.asname or alias.name).split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                space.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.If | ast.Try):  # TYPE_CHECKING blocks, optional imports
            for block in (node.body, node.orelse, *(h.body for h in getattr(node, "handlers", []))):
                _fill(space, block, in_class)
        else:
            for name in _targets(node):
                space.names[name] = None


@cache
def _python_files() -> tuple[Path, ...]:
    return tuple(path for package in PACKAGES for path in sorted((REPO / package).rglob("*.py")))


@cache
def _index() -> dict[str, Namespace]:
    modules: dict[str, Namespace] = {}
    for path in _python_files():
        space = Namespace(_module_name(path))
        _fill(space, ast.parse(path.read_text(encoding="utf-8")).body, in_class=False)
        modules[space.module] = space
    return modules


def _member(space: Namespace, name: str, seen: frozenset[str]) -> Namespace | bool:
    """``name`` in ``space`` (a module's or a class's): its class namespace, True, or False where absent.

    A member a class does not define may be inherited: found in a base of the house, or assumed in a
    base from elsewhere (pydantic's, the standard library's), which this index does not read.
    """
    if name in space.classes:
        return space.classes[name]
    if name in space.names or "__getattr__" in space.names:  # a module's __getattr__ answers any name
        target = space.names.get(name)
        return _resolve(target, seen) if target and target not in seen else True
    for base in (written.split("[")[0] for written in space.bases):
        if base.split(".")[-1] in _MEMBERLESS_BASES:
            continue
        resolved = _resolve(base if "." in base else f"{space.module}.{base}", seen)
        if resolved is False:
            return True  # a base from outside the house (pydantic's BaseModel): its members are not indexed
        if isinstance(resolved, Namespace) and _member(resolved, name, seen) is not False:
            return True
    return False


def _walk(space: Namespace, names: list[str], seen: frozenset[str]) -> Namespace | bool:
    """``names``, one member inside the other, from ``space``: what the last names, or False."""
    found: Namespace | bool = space
    for name in names:
        if not isinstance(found, Namespace):
            return found  # a member of a name this index does not open (a function, a constant)
        found = _member(found, name, seen)
        if found is False:
            return False
    return found


def _resolve(dotted: str, seen: frozenset[str] = frozenset()) -> Namespace | bool:
    """What ``dotted`` names: a class's namespace, True for any other name of the house, False if it
    names nothing (or lies outside the house)."""
    modules = _index()
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in modules:
            return _walk(modules[module], parts[cut:], seen | {dotted})
    return False


def _resolves_in(module: str, reference: str) -> bool:
    """``reference`` from inside ``module``: absolute, or relative to the module or one of its classes."""
    if reference.split(".")[0] in PACKAGES:
        return _resolve(reference) is not False
    space = _index()[module]
    return any(_walk(candidate, reference.split("."), frozenset()) for candidate in [space, *space.classes.values()])


def _matches(places: Iterable[Path], *patterns: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    """Each match of each of ``patterns`` in the files ``places``, with where it stands (``path:line``)."""
    for place in places:
        text = place.read_text(encoding="utf-8", errors="replace")
        for pattern in patterns:
            for match in pattern.finditer(text):
                yield f"{place.relative_to(REPO)}:{text.count(chr(10), 0, match.start()) + 1}", match


def test_every_reference_in_the_code_names_something_that_exists() -> None:
    # This file's docstring and cases name dangling references on purpose.
    code = [path for path in _python_files() if path != Path(__file__)]
    references = {
        (_module_name(path), where, match.group(1)) for path in code for where, match in _matches([path], ROLE, DOTTED)
    }
    assert len(references) > 300  # the patterns still find the references the code is full of
    dangling = sorted(f"{where}: {name}" for module, where, name in references if not _resolves_in(module, name))
    assert dangling == []


def _pages() -> list[Path]:
    """The README and the docs pages. bench/RESULTS.md is left out: each of its entries records the
    tree of its day, module paths included."""
    return [REPO / "README.md", REPO / "deploy" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_every_dotted_name_in_the_docs_exists() -> None:
    dangling = [
        f"{where}: {match.group(1)}" for where, match in _matches(_pages(), DOTTED) if _resolve(match.group(1)) is False
    ]
    assert dangling == []


@pytest.mark.parametrize(
    ("reference", "exists"),
    [
        ("search.capabilities.ReEmbeds", True),
        ("search.base.ReEmbeds", False),  # where it stood before it moved
        ("api.services.memories.MemoryService.lifecycle", True),  # set on self in __init__
        ("api.services.memories.MemoryService.no_such_member", False),
        ("hivemem.config.Settings.data_dir", True),  # a pydantic field
        ("search.base.MemoryStore.put_many", True),
        ("search.base.MemoryStore.no_such_method", False),  # a Protocol gives it no members
        ("hivemem.answers.ErrorBody", True),
        ("hivemem.schemas.ErrorBody", False),
    ],
)
def test_the_resolver_tells_a_name_from_a_dangling_one(reference: str, exists: bool) -> None:
    assert (_resolve(reference) is not False) is exists


def test_every_path_in_the_docs_exists() -> None:
    paths = list(_matches(_pages(), REPO_PATH))
    assert len(paths) > 10
    assert [f"{where}: {match.group(1)}" for where, match in paths if not (REPO / match.group(1)).exists()] == []


VARIABLE = re.compile(r"HIVEMEM_[A-Z0-9_]*[A-Z0-9](_\*)?")


def _variables_read() -> set[str]:
    """Every ``HIVEMEM_*`` name a setting or tuning parameter answers to, and every one the code
    spells out whole as a string (``os.environ.get("HIVEMEM_CONFIG")``, an alias, a test's switch)."""
    from api.settings_catalogue import TUNING_GROUPS
    from hivemem.config import Settings

    names = {f"HIVEMEM_{field.upper()}" for group in (Settings, *TUNING_GROUPS) for field in group.model_fields}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and re.fullmatch(r"HIVEMEM_[A-Z0-9_]+", str(node.value)):
                names.add(node.value)
    return names


def test_every_hivemem_variable_named_is_one_hivemem_reads() -> None:
    """A renamed or removed setting leaves its old variable in prose that tells an operator to set
    it. ``HIVEMEM_OPENSEARCH_*`` stands for a family: at least one of them must exist."""
    known = _variables_read()
    places = [*_pages(), REPO / "docker-compose.yml", REPO / ".ci" / "run", *_python_files()]
    places += sorted(path for folder in ("deploy", ".github") for path in (REPO / folder).rglob("*") if path.is_file())
    named = list(_matches(places, VARIABLE))

    def known_as(name: str) -> bool:
        family = name.removesuffix("_*")
        return name in known or (name != family and any(known_name.startswith(family + "_") for known_name in known))

    assert len(named) > 200
    assert [f"{where}: {match.group(0)}" for where, match in named if not known_as(match.group(0))] == []


# A command in backticks (`hivemem memory undo ID`), or a shell line of a code block ($ hivemem …).
COMMAND_LINE = re.compile(r"`{1,2}hivemem ([^`]+)`|^\$ hivemem (.+)$", re.MULTILINE)


def _unknown_in(words: list[str], commands: dict[str, list[str]]) -> str | None:
    """What in ``words`` (after ``hivemem``) the CLI does not have: a command, a subcommand, an
    option; None when all of it exists. Placeholders (``COMMAND``, ``ID``) and arguments pass."""
    path: list[str] = []
    for word in words:
        if " ".join([*path, word]) not in commands:
            break
        path.append(word)
    if not path:
        return None if not words or not re.fullmatch(r"[a-z][a-z-]+", words[0]) else f"command {words[0]}"
    command, rest = " ".join(path), words[len(path) :]
    has_subcommands = any(name.startswith(command + " ") for name in commands)
    if has_subcommands and rest and re.fullmatch(r"[a-z][a-z-]+", rest[0]):
        return f"subcommand {command} {rest[0]}"
    for word in rest:
        option = word.split("=")[0].rstrip(",.;:)")
        if option.startswith("--") and option not in (*commands[command], "--help"):
            return f"option {option} of {command}"
    return None


def test_every_command_named_is_one_the_cli_has() -> None:
    from tests.public_surface import cli_commands

    commands = cli_commands()
    lines = [
        (where, (match.group(1) or match.group(2)).split())
        for where, match in _matches([*_pages(), *_python_files()], COMMAND_LINE)
    ]
    assert len(lines) > 200
    unknown = [f"{where}: {problem}" for where, words in lines if (problem := _unknown_in(words, commands))]
    assert unknown == []
