"""The service a CLI command runs on: opened over the configured store, closed when the command is
done. Every command that works on the store itself (not through a running server) opens it here."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from hivemem.config import Settings

if TYPE_CHECKING:
    from api.services.memories import MemoryService

__all__ = ["opened_service"]


@contextmanager
def opened_service(settings: Settings, *, load_model: bool = False) -> Iterator[MemoryService]:
    """The memory service over ``settings``' store; closed (its jobs finished, the store closed) when
    the block ends, however it ends.

    The model loads on the first text that needs one, or at once with ``load_model``. A key of the
    config file's ``[tuning]`` table that is no tuning parameter, or a tuning value out of bounds, is
    refused first, before the store is opened or made, as the serving processes refuse it. The
    service is imported here, not when the CLI starts: a command that goes through a running server
    never imports it.
    """
    from api.services.memories import MemoryService
    from api.settings_catalogue import refuse_invalid_tuning

    refuse_invalid_tuning()
    service = MemoryService.from_settings(settings, lazy_model=not load_model)
    try:
        yield service
    finally:
        service.close()
