"""Where the config file is: one TOML file for the operator settings and the ``[tuning]`` table."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CONFIG_VARIABLE", "config_file_path"]

CONFIG_VARIABLE = "HIVEMEM_CONFIG"


def config_file_path() -> Path:
    """The TOML config file: ``HIVEMEM_CONFIG``, else ``~/.config/hivemem/config.toml``."""
    explicit = os.environ.get(CONFIG_VARIABLE)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hivemem" / "config.toml"
