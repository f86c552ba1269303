"""Where the config file is: one TOML file for the operator settings and the ``[tuning]`` table."""

from __future__ import annotations

import os
from pathlib import Path

from hivemem.errors import ConfigError

__all__ = ["config_file_path", "existing_config_file"]

_VARIABLE = "HIVEMEM_CONFIG"


def config_file_path() -> Path:
    """The TOML config file: ``HIVEMEM_CONFIG``, else ``~/.config/hivemem/config.toml``."""
    explicit = os.environ.get(_VARIABLE)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hivemem" / "config.toml"


def existing_config_file() -> Path | None:
    """The config file to read; None when the default one is not there (it is optional).

    Raises ``ConfigError`` when the file ``HIVEMEM_CONFIG`` names is not a file: a mistyped path, or
    a volume not mounted, would otherwise run on the defaults, a store of its own included.
    """
    path = config_file_path()
    if path.is_file():
        return path
    if os.environ.get(_VARIABLE):
        found = "a folder, not a file" if path.is_dir() else "no such file"
        raise ConfigError(f"config file {path} (named by {_VARIABLE}): {found}")
    return None
