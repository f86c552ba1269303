"""The ``hivemem`` command line. ``main`` hands ``hivemem hook EVENT`` to :mod:`api.hooks` before
anything else is imported (a client waits on every hook, and the full CLI's imports take a fifth
of a second); every other command goes to :mod:`api.cli.app`, the parser of every command group."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hivemem`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args):
        from api.hooks.command import main as run_hook

        return run_hook(args[1:])
    from api.cli.app import main as run_command

    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
