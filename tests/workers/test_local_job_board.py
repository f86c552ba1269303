"""The data folder's job board is one for every hivemem process of the machine: a job another
process runs is read here as it goes, and one whose process ended unfinished reads as failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hivemem.errors import StoreUnavailableError
from hivemem.jobs import Job, JobKind, JobState
from workers.local_job_board import LocalJobBoard

# Another process on the same file: it makes a job of two items, records the first, and then
# either records the second or exits with the job unfinished.
_OTHER_PROCESS = """
import sys
from pathlib import Path
from hivemem.jobs import Job, JobKind
from workers.local_job_board import LocalJobBoard

board = LocalJobBoard(Path(sys.argv[1]))
board.create(Job(id=sys.argv[2], kind=JobKind.MEMORIZE_BULK, total=2, owner="local", scopes=("github.com/acme/api",)))
board.start(sys.argv[2])
board.record(sys.argv[2], {"m0": {"index": 0, "id": "m0", "outcome": "stored"}})
if sys.argv[3] == "finish":
    board.record(sys.argv[2], {"m1": {"index": 1, "id": "m1", "outcome": "reinforced"}})
"""


def _other_process(path: Path, job_id: str, how: str) -> None:
    subprocess.run([sys.executable, "-c", _OTHER_PROCESS, str(path), job_id, how], check=True, timeout=120)


def test_a_job_of_another_process_is_read_here_with_its_result(tmp_path: Path) -> None:
    board = LocalJobBoard(tmp_path / "jobs.db")
    _other_process(tmp_path / "jobs.db", "job_stdio", "finish")
    job = board.get("job_stdio")
    assert (job.state, job.done, job.owner, job.scopes) == (JobState.DONE, 2, "local", ("github.com/acme/api",))
    assert job.result is not None and (job.result["stored"], job.result["reinforced"]) == (1, 1)
    assert [listed.id for listed in board.recent()] == ["job_stdio"]
    board.close()


def test_a_job_whose_process_ended_unfinished_reads_as_failed_saying_why(tmp_path: Path) -> None:
    board = LocalJobBoard(tmp_path / "jobs.db")
    _other_process(tmp_path / "jobs.db", "job_cut", "exit")
    job = board.get("job_cut")
    assert (job.state, job.done) == (JobState.FAILED, 1)
    assert job.error is not None and "ended before it finished" in job.error
    assert [listed.state for listed in board.recent()] == [JobState.FAILED]
    # This process's own running job is running.
    board.create(Job(id="job_mine", kind=JobKind.INGEST, total=3, state=JobState.RUNNING))
    assert board.get("job_mine").state is JobState.RUNNING
    board.close()


def test_a_board_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "jobs.db").mkdir()  # a folder where the file should be
    with pytest.raises(StoreUnavailableError, match="cannot open the job board"):
        LocalJobBoard(tmp_path / "jobs.db")
