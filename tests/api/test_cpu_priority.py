"""``lower_cpu_priority``: the niceness, and the session's share where the kernel schedules per session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SWITCH = Path("/proc/sys/kernel/sched_autogroup_enabled")

pytestmark = pytest.mark.skipif(
    not _SWITCH.exists() or _SWITCH.read_text().strip() != "1" or not Path("/proc/self/autogroup").exists(),
    reason="needs Linux with autogroup scheduling on",
)

# A child process reports what lower_cpu_priority said and what the kernel then holds for it.
_PROBE = """
import json, os
from pathlib import Path
from api.process.cpu_priority import lower_cpu_priority
warning = lower_cpu_priority(5)
print(json.dumps({"warning": warning, "nice": os.nice(0), "autogroup": Path("/proc/self/autogroup").read_text()}))
"""


def _probe(*, own_session: bool) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, start_new_session=own_session
    )
    return dict(json.loads(out.stdout))


def test_a_session_leader_lowers_its_sessions_share_too() -> None:
    report = _probe(own_session=True)
    assert report["warning"] is None
    assert str(report["autogroup"]).split()[-1] == str(report["nice"])


def test_a_process_sharing_its_session_leaves_the_session_alone_and_says_why() -> None:
    before = Path("/proc/self/autogroup").read_text()
    report = _probe(own_session=False)
    assert "setsid" in str(report["warning"])
    assert report["autogroup"] == before  # the session it shares with this test keeps its priority
    assert Path("/proc/self/autogroup").read_text() == before
