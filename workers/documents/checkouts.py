"""A file of a project's own checkout is named by its path in the checkout: ``repo:docs/runbook.md``.

A team's store is shared, so an indexed document's name must mean the same on every teammate's
machine: an absolute path (``/home/ana/src/api/docs/runbook.md``) cites one person's home folder,
and names a file no one else has. A file indexed into the scope of the git checkout it lies in
(the scope :func:`hivemem.scope.derive_scope` gives the checkout's root: its remote) is named by
its path below that root, and each machine finds it again in its own checkout of the scope: the
caller's project folder (the CLI's working folder, the folder a stdio client starts the server in),
or a folder named to prune. Any other file keeps its absolute path: a file of another project's
checkout could not be found again from this scope's name.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from hivemem.errors import DocumentError, DocumentNotFoundError
from hivemem.scope import derive_scope, work_tree

__all__ = [
    "CHECKOUT_PREFIX",
    "checkout_file",
    "checkout_root",
    "indexed_name",
    "is_checkout_name",
    "path_in_checkout",
]

CHECKOUT_PREFIX = "repo:"


def is_checkout_name(source: str) -> bool:
    """Whether ``source`` names a file by its path in the scope's checkout (``repo:PATH``)."""
    return source.startswith(CHECKOUT_PREFIX)


def checkout_root(folder: Path | None, scope: str) -> Path | None:
    """The root of the checkout ``folder`` lies in, when it is a checkout of ``scope``'s project."""
    if folder is None or not scope:
        return None
    try:
        root = work_tree(folder)
        return root if root is not None and derive_scope(root) == scope else None
    except OSError:  # a folder this process may not look into: no checkout known there
        return None


def indexed_name(source: str, scope: str) -> str:
    """The name the document ``source`` is indexed under in ``scope``: ``repo:PATH`` for a file (an
    absolute, resolved path) of a checkout of the scope's project; any other source as it is."""
    path = Path(source)
    if not path.is_absolute():  # a URL, stored text, an upload, a name given already
        return source
    root = checkout_root(path.parent, scope)
    return source if root is None else CHECKOUT_PREFIX + path.relative_to(root).as_posix()


def path_in_checkout(name: str, root: Path) -> Path:
    """The file ``repo:PATH`` names in the checkout at ``root``. Raises ``DocumentError`` for a
    path that would leave it."""
    relative = PurePosixPath(name.removeprefix(CHECKOUT_PREFIX))
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise DocumentError("a repo: name is a path inside the project's checkout, without '..'", source=name)
    return root.joinpath(*relative.parts)


def checkout_file(name: str, scope: str, project: Path | None) -> Path:
    """Where the file ``repo:PATH`` of ``scope`` is on this machine: in the checkout of the scope
    that ``project`` lies in. Raises ``DocumentNotFoundError`` when ``project`` is no checkout of
    that scope, ``DocumentError`` for a path that would leave the checkout."""
    root = checkout_root(project, scope)
    if root is None:
        where = f"a checkout of {scope}" if scope else "a project's checkout"
        raise DocumentNotFoundError(
            f"this file is named in {where}, and this machine's is not known here: run hivemem in the project's folder",
            source=name,
        )
    return path_in_checkout(name, root)
