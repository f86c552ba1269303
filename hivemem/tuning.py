"""Tuning parameters: the numbers of the engine, in groups owned by the modules that use them.

An operator decides a handful of things (:class:`hivemem.config.Settings`: the store, the broker,
the model, the bind, the team). Everything else is tuning: fusion weights, vector probe sizes,
retry counts, chunk lengths. Each module that uses such numbers declares them once, as a subclass
of :class:`Tuning` with its defaults, and builds it where it needs it (``RecallParams()``).

A group reads, highest first: explicit arguments, ``HIVEMEM_<NAME>`` environment variables (the
names the settings had before they were split, so benchmarks and experiments keep working), and
the ``[tuning]`` table of the config file. ``docs/settings.md`` lists every group.
"""

from __future__ import annotations

import tomllib
from typing import Any, ClassVar

from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hivemem.config_file import existing_config_file
from hivemem.errors import ConfigError

__all__ = ["TUNING_TABLE", "Tuning", "config_table"]

TUNING_TABLE = "tuning"


def config_table(table: str | None) -> dict[str, Any]:
    """The config file's top level (``table`` None) or one of its tables; empty without a file.

    Raises ``ConfigError`` naming the file when it is not TOML, or when ``HIVEMEM_CONFIG`` names a
    file that is not there (:func:`hivemem.config_file.existing_config_file`): a config that cannot
    be read must not be taken for an empty one.
    """
    path = existing_config_file()
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: not TOML ({exc})") from exc
    if table is None:
        return data
    section = data.get(table, {})
    if not isinstance(section, dict):
        raise ConfigError(f"config file {path}: [{table}] must be a table")
    return section


class Tuning(BaseSettings):
    """A group of tuning parameters; subclasses declare the fields, with their defaults and bounds.

    Frozen: a component keeps the group it was built with. ``model_copy(update=...)`` makes a
    variant (benchmarks compare them).
    """

    model_config = SettingsConfigDict(env_prefix="HIVEMEM_", extra="forbid", frozen=True)

    # What docs/settings.md calls the group; subclasses set it.
    group_title: ClassVar[str] = ""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The [tuning] table holds every group's keys; each group takes its own fields from it (a
        # key no group owns is refused where processes start: api.settings_catalogue).
        own = {key: value for key, value in config_table(TUNING_TABLE).items() if key in settings_cls.model_fields}
        return (init_settings, env_settings, InitSettingsSource(settings_cls, own))
