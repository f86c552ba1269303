"""Lowering a worker's CPU priority so that it takes the cores only when the gateway leaves them.

``nice`` alone is not enough on Linux. With autogroup scheduling on (``kernel.sched_autogroup_enabled``,
the default of most distributions), the scheduler first shares the CPU between *sessions*, and a
process's niceness only counts against the processes of its own session. A worker started by a
service manager or a supervisor (each service in a session of its own) then keeps an equal share
against the gateway whatever its niceness. Measured on a 2-core machine with 2 ingesting workers
and 8 clients calling recall: niceness 19 moved recall's p95 from 5.6x to 4.6x its idle value.
The session's own niceness is ``/proc/self/autogroup`` (see sched(7), "The autogroup feature").
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

__all__ = ["BACKGROUND_NICE", "lower_cpu_priority", "lower_this_thread"]

# The niceness of the gateway's document-embedding threads: the lowest priority, so an upload takes
# the cores only while requests leave them (within one process, niceness counts between threads).
BACKGROUND_NICE = 19

_AUTOGROUP = Path("/proc/self/autogroup")
_AUTOGROUP_SWITCH = Path("/proc/sys/kernel/sched_autogroup_enabled")


def lower_cpu_priority(nice: int) -> str | None:
    """Add ``nice`` to this process's niceness and, where the scheduler shares the CPU per session,
    to its session's too. Children forked afterwards inherit both.

    Returns a warning when the niceness cannot take full effect: autogroups are on and this process
    does not lead its session, so raising the session's niceness would slow the shell or the
    supervisor it shares that session with; starting the worker in a session of its own (``setsid``,
    a service manager) fixes that.
    """
    if nice <= 0:
        return None
    niceness = os.nice(nice)
    if not _autogroups_on():
        return None
    if os.getsid(0) != os.getpid():
        return (
            "--nice lowers this worker's priority only against its own session: the scheduler shares "
            "the CPU between sessions first (autogroup); start the worker with setsid or from a service "
            "manager for it to yield to the gateway"
        )
    try:
        _AUTOGROUP.write_text(f"{niceness}\n")
    except OSError as exc:  # a kernel without the file's write side, or a sandbox that forbids it
        return f"--nice: could not lower the session's priority ({exc.strerror}); the worker's own is lowered"
    return None


def lower_this_thread() -> None:
    """Give the calling thread the niceness ``BACKGROUND_NICE`` (Linux keeps one per thread); where
    that cannot be done, the thread keeps its priority."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


def _autogroups_on() -> bool:
    try:
        return _AUTOGROUP_SWITCH.read_text().strip() == "1" and _AUTOGROUP.exists()
    except OSError:
        return False
