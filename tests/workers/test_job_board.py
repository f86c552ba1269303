"""The JobBoard contract (workers/job_board.py) on every board: in-process, the data folder's file
that a machine's processes share, and a real Redis."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from hivemem.errors import BrokerUnavailableError, JobNotFoundError
from hivemem.jobs import DeadLetter, Job, JobKind, JobState, new_job_id
from hivemem.model import utcnow
from workers.job_board import JobBoard, MemoryJobBoard, RedisJobBoard
from workers.local_job_board import LocalJobBoard


def _open(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> JobBoard:
    if kind == "memory":
        return MemoryJobBoard()
    if kind == "file":
        return LocalJobBoard(tmp_path / "jobs.db")
    return RedisJobBoard.from_url(request.getfixturevalue("redis_url"))


@pytest.fixture(params=["memory", "file", "redis"])
def board(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JobBoard]:
    opened = _open(request.param, request, tmp_path)
    yield opened
    opened.close()


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_closed_board_leaves_its_jobs_to_the_next_one(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Closing releases the file or the connection, never the records: the server's next start reads them."""
    first = _open(kind, request, tmp_path)
    job = Job(id=new_job_id(), kind=JobKind.MEMORIZE, total=1)
    first.create(job)
    first.close()
    second = _open(kind, request, tmp_path)
    try:
        assert second.get(job.id).state == JobState.QUEUED
    finally:
        second.close()


def outcome(index: int, memory_id: str, outcome: str = "stored") -> dict[str, object]:
    return {"index": index, "id": memory_id, "outcome": outcome}


def test_a_job_goes_queued_running_done_with_its_result_in_order(board: JobBoard) -> None:
    job = Job(id=new_job_id(), kind=JobKind.MEMORIZE_BULK, total=3)
    board.create(job)
    assert board.get(job.id).state is JobState.QUEUED
    board.start(job.id)
    assert board.get(job.id).state is JobState.RUNNING
    board.record(job.id, {"c": outcome(2, "m3"), "a": outcome(0, "m1")})
    partial = board.get(job.id)
    assert (partial.state, partial.done, partial.result) == (JobState.RUNNING, 2, None)
    assert partial.progress == pytest.approx(2 / 3)
    board.record(job.id, {"b": outcome(1, "m0", "reinforced")})
    done = board.get(job.id)
    assert (done.state, done.done, done.progress) == (JobState.DONE, 3, 1.0)
    assert done.result == {
        "items": [
            {"id": "m1", "outcome": "stored"},
            {"id": "m0", "outcome": "reinforced"},
            {"id": "m3", "outcome": "stored"},
        ],
        "stored": 2,
        "reinforced": 1,
        "merged": 0,
        "superseded": 0,
    }


def test_recording_the_same_items_again_moves_nothing(board: JobBoard) -> None:
    job = Job(id=new_job_id(), kind=JobKind.MEMORIZE_BULK, total=2)
    board.create(job)
    for _ in range(3):  # a redelivered task records its items again
        board.record(job.id, {"a": outcome(0, "m1")})
    assert board.get(job.id).done == 1
    assert board.get(job.id).state is JobState.RUNNING


def test_final_states_are_final(board: JobBoard) -> None:
    done = Job(id=new_job_id(), kind=JobKind.MEMORIZE)
    board.create(done)
    board.record(done.id, {"a": outcome(0, "m1")})
    board.start(done.id)
    board.fail(done.id, "too late")
    assert board.get(done.id).state is JobState.DONE
    failed = Job(id=new_job_id(), kind=JobKind.MEMORIZE)
    board.create(failed)
    board.fail(failed.id, "StoreUnavailableError: down")
    board.start(failed.id)
    got = board.get(failed.id)
    assert (got.state, got.error) == (JobState.FAILED, "StoreUnavailableError: down")


def test_unknown_jobs_are_not_found(board: JobBoard) -> None:
    with pytest.raises(JobNotFoundError):
        board.get("job_nope")
    board.start("job_nope")  # no-ops, no error, no record created
    board.record("job_nope", {"a": outcome(0, "m1")})
    with pytest.raises(JobNotFoundError):
        board.get("job_nope")


def test_dead_letters_newest_first(board: JobBoard) -> None:
    now = utcnow()
    for i in range(3):
        board.add_dead_letter(
            DeadLetter(
                task="hivemem.resolve",
                job_ids=(f"job_{i}",),
                error="boom",
                attempts=6,
                failed_at=now + timedelta(seconds=i),
            )
        )
    letters = board.dead_letters(limit=2)
    assert [d.job_ids for d in letters] == [("job_2",), ("job_1",)]
    assert letters[0].attempts == 6 and letters[0].task == "hivemem.resolve"


def test_recent_jobs_newest_first_by_state_without_results(board: JobBoard) -> None:
    start = utcnow()
    jobs = [
        Job(id=new_job_id(), kind=JobKind.INGEST, total=1, created_at=start + timedelta(seconds=i)) for i in range(3)
    ]
    for job in jobs:
        board.create(job)
    board.record(jobs[1].id, {"a": outcome(0, "m1")})
    board.fail(jobs[2].id, "RuntimeError: boom")

    newest = board.recent(limit=2)
    assert [j.id for j in newest] == [jobs[2].id, jobs[1].id]
    assert newest[0].error == "RuntimeError: boom" and newest[1].result is None
    assert [j.id for j in board.recent(state=JobState.DONE) if j.id in {x.id for x in jobs}] == [jobs[1].id]
    assert [j.id for j in board.recent(state=JobState.QUEUED) if j.id in {x.id for x in jobs}] == [jobs[0].id]


def test_concurrent_recorders_finish_a_job_exactly_once(board: JobBoard) -> None:
    job = Job(id=new_job_id(), kind=JobKind.MEMORIZE_BULK, total=200)
    board.create(job)

    def record(start: int) -> None:
        for i in range(start, 200, 4):
            board.record(job.id, {f"m{i}": outcome(i, f"m{i}")})

    threads = [threading.Thread(target=record, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = board.get(job.id)
    assert (final.state, final.done) == (JobState.DONE, 200)
    assert final.result is not None and [i["id"] for i in final.result["items"]] == [f"m{i}" for i in range(200)]


def test_records_expire(redis_url: str) -> None:
    board = RedisJobBoard.from_url(redis_url, ttl_s=1)
    job = Job(id=new_job_id(), kind=JobKind.MEMORIZE)
    board.create(job)
    import redis

    assert 0 < redis.Redis.from_url(redis_url).ttl(f"hivemem:job:{job.id}") <= 1


def test_an_unreachable_broker_is_a_clear_error() -> None:
    from tests.e2e.helpers import free_port

    board = RedisJobBoard.from_url(f"redis://127.0.0.1:{free_port()}/0")
    assert board.ping() is False
    with pytest.raises(BrokerUnavailableError, match="unreachable"):
        board.create(Job(id=new_job_id(), kind=JobKind.MEMORIZE))
