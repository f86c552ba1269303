"""What the paths of an ingest or a prune name: files, the files of folders (walked, filtered by
extension or glob), the URLs of ``.urls`` lists, each checked against the folders a caller may
read; and which indexed files are gone."""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hivemem.errors import DocumentAccessDenied, DocumentError, ValidationError
from hivemem.wording import counted
from workers.documents import EXTENSIONS
from workers.documents.checkouts import checkout_root, is_checkout_name, path_in_checkout
from workers.documents.sources import STORED_PREFIXES, FileAccess, is_url

__all__ = ["Expansion", "checked_source", "expand_paths", "file_gone", "left_out_words", "prune_folder"]

_NOT_MATCHING = "(not matching the glob)"


def left_out_words(left_out: Mapping[str, int]) -> str:
    """Folder files not read, in words: "2 files .odt; 1 file (no extension) (hivemem reads …)"."""
    by_suffix = Counter(left_out)
    unmatched = by_suffix.pop(_NOT_MATCHING, 0)
    parts = [f"{counted(count, 'file')} {suffix}" for suffix, count in by_suffix.most_common(5)]
    if by_suffix:
        parts[-1] += f" (hivemem reads {', '.join(sorted(EXTENSIONS))})"
    if unmatched:
        parts.append(f"{counted(unmatched, 'file')} not matching the glob")
    return "; ".join(parts)


def _nothing_to_index(left_out: Counter[str]) -> str:
    """Why an ingest found no document: the files its folders held, and why each kind was left out."""
    if not left_out:
        return "paths: no documents found there: the folders and URL lists named hold none"
    return f"paths: no documents found there; left out: {left_out_words(left_out)}"


@dataclass(frozen=True, slots=True)
class Expansion:
    """The documents a list of paths names, and the files of its folders left out as formats
    hivemem does not read (by extension; files a glob passed over are not counted: they were
    left out on request)."""

    sources: list[str]
    left_out: dict[str, int]


def expand_paths(paths: Sequence[str], globs: Sequence[str], access: FileAccess) -> Expansion:
    """The sources a list of paths names: files, the files of folders (walked, sorted), and the
    URLs listed in ``.urls`` files (one per line, ``#`` comments). Raises ``ValidationError``
    when they name none, saying which files of folders were left out and why."""
    sources: list[str] = []
    left_out: Counter[str] = Counter()  # folder files not read, by format (or not matching the glob)
    for given in paths:
        if is_url(given):
            sources.append(given)
            continue
        try:
            path = Path(given).expanduser()
            is_folder, is_list = path.is_dir(), path.suffix.lower() == ".urls" and path.is_file()
        except (OSError, RuntimeError):
            sources.append(given)  # a name no file can have: it fails as its document, saying why
            continue
        if is_folder:
            real = path.resolve()
            if access.allowed is not None and not any(real.is_relative_to(f) for f in access.allowed):
                access.resolve(given)  # raises the refusal with its reason
            for root, dirs, files in os.walk(real):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    if globs and not any(fnmatch.fnmatch(name, g) for g in globs):
                        left_out[_NOT_MATCHING] += 1
                        continue
                    if not globs and Path(name).suffix.lower() not in EXTENSIONS:
                        left_out[Path(name).suffix.lower() or "(no extension)"] += 1
                        continue
                    sources.append(str(Path(root) / name))
        elif is_list:
            for line in access.resolve(given).read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    sources.append(line)
        else:
            sources.append(given)
    if not sources:
        raise ValidationError(_nothing_to_index(left_out), field="paths")
    left_out.pop(_NOT_MATCHING, None)
    return Expansion(sources, dict(left_out.most_common()))


def checked_source(source: str, access: FileAccess, scope: str) -> str:
    """A source as the job carries it: a file the caller may not read is refused now, for the whole
    request; one that is missing (or a ``repo:`` name of a checkout not on this machine) stays, and
    fails as that document's outcome."""
    if is_url(source):
        return source
    try:
        return str(access.resolve(access.located(source, scope)))
    except DocumentAccessDenied:
        raise
    except DocumentError:
        return source


def prune_folder(given: str, access: FileAccess) -> Path:
    """The real path of a folder named to prune (it may be gone whole), checked as a folder to
    ingest is. Raises ``ValidationError`` for a file or a name the file system refuses,
    ``DocumentAccessDenied`` outside the folders this caller may name."""
    try:
        path = Path(given).expanduser()
        real = path.resolve()
        a_file = real.exists() and not real.is_dir()
    except (OSError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValidationError(f"{given!r} cannot be looked at: {reason}", field="folders") from exc
    if a_file:
        raise ValidationError(
            f"{given!r} is not a folder: prune removes the documents of a folder whose files are gone "
            "(a single document: `knowledge delete`)",
            field="folders",
        )
    if access.allowed is not None and (
        not path.is_absolute() or not any(real.is_relative_to(f) for f in access.allowed)
    ):
        access.resolve(given)  # raises the refusal with its reason
    return real


def file_gone(uri: str, scope: str, folders: Sequence[Path] | None = None, project: Path | None = None) -> bool:
    """Whether the indexed ``uri`` of ``scope`` is a file (under one of ``folders``, when given) that
    no longer exists on this machine; a URL or stored text never is. A ``repo:`` name is looked for
    in the checkout each folder lies in (without folders: the one ``project`` lies in); where no
    checkout of the scope is known, it is not gone: this machine cannot tell."""
    if uri.startswith(STORED_PREFIXES) or is_url(uri):
        return False
    try:
        if is_checkout_name(uri):
            return any(not path.is_file() for path in _checkout_paths(uri, scope, folders, project))
        path = Path(uri)
        under = folders is None or any(path.is_relative_to(folder) for folder in folders)
        return under and not path.is_file()
    except (OSError, ValueError, DocumentError):  # a path the file system refuses to look at now: kept
        return False


def _checkout_paths(name: str, scope: str, folders: Sequence[Path] | None, project: Path | None) -> list[Path]:
    """Where the file ``name`` of ``scope`` would be: in the checkout of each folder, when it is
    under that folder (without folders: in ``project``'s checkout)."""
    if folders is None:
        root = checkout_root(project, scope)
        return [] if root is None else [path_in_checkout(name, root)]
    paths: list[Path] = []
    for folder in folders:
        root = checkout_root(folder, scope)
        if root is not None and (path := path_in_checkout(name, root)).is_relative_to(folder):
            paths.append(path)
    return paths
