"""Does the broker keep queued jobs across its own restart? Redis does so only when told to.

Every accepted job lives in the broker until a worker finishes it. A Redis with neither an
append-only file (AOF) nor RDB snapshots loses every one of them when it restarts; with RDB alone
it loses those queued since the last snapshot; with ``appendonly yes`` and ``appendfsync
everysec`` a crash of Redis itself loses nothing it acknowledged, and a crash of the machine at
most the last second. ``hivemem serve`` and ``hivemem worker`` warn at start about the first case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

__all__ = ["persistence_warning"]


def persistence_warning(client: redis.Redis) -> str | None:
    """A warning when the broker's Redis persists nothing (no AOF, no RDB); None when it does, or
    when it cannot tell (a managed Redis that hides its configuration, or no answer at all)."""
    import redis as redis_lib

    try:
        info = client.info("persistence")
        if int(info.get("aof_enabled", 0)) == 1:
            return None
        saves = client.config_get("save").get("save")
    except redis_lib.RedisError:
        return None
    if saves:
        return None
    return (
        "the job broker (Redis) keeps nothing across a restart: no append-only file and no snapshots, so a "
        "restart of Redis loses every queued job. Run it with --appendonly yes --appendfsync everysec "
        "(deploy/README.md, 'Broker durability')."
    )
