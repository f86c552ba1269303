"""Where jobs and dead letters live: in this process (embedded) or in Redis (distributed).

Both boards have the same contract, checked by ``tests/workers/test_job_board.py``:

- ``record`` is idempotent per item: a redelivered task that records the same items again does
  not move progress, so ``done`` counts each item once and a job is ``done`` exactly when every
  item has an outcome.
- A final state is final: ``start`` never takes a done or failed job back to running.
- Records expire ``ttl_s`` after their last change; an unknown or expired id raises
  ``JobNotFoundError``.

The Redis board is also the source of truth for what was accepted: every job that is not final
is kept in an index of open jobs with the payload that can queue it again, so a job whose broker
message was lost is found and re-published (:mod:`workers.reconcile`) instead of staying
``queued`` for good.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from hivemem.errors import BrokerUnavailableError, JobNotFoundError
from hivemem.jobs import DeadLetter, Job, JobKind, JobState
from hivemem.model import WriteOutcome, utcnow
from hivemem.resolution import Resolution
from workers.broker_persistence import persistence_warning

if TYPE_CHECKING:
    import redis
    from redis.typing import EncodableT, FieldT

__all__ = [
    "ItemOutcome",
    "JobBoard",
    "JobItem",
    "MemoryJobBoard",
    "OpenJob",
    "RedisJobBoard",
    "item_key",
    "item_outcome",
    "job_result",
]

# One item's outcome, keyed by the id the gateway gave the incoming memory:
# {"index": position in the job, "id": stored memory id, "outcome": "stored" | "reinforced"}.
ItemOutcome = dict[str, Any]
# One memory of one job, as it travels: {"job_id": ..., "index": position in the job, "memory": {...}};
# or one document of an ingest job: {"job_id": ..., "index": ..., "document": {"scope", "source", "force"}}.
JobItem = dict[str, Any]

_DOCUMENT_OUTCOMES = ("indexed", "unchanged", "failed")


def item_key(item: JobItem) -> str:
    """The id an item's outcome is recorded under: the incoming memory's id, or the document's source."""
    return str(item["memory"]["id"]) if "memory" in item else str(item["document"]["source"])


@dataclass(frozen=True, slots=True)
class OpenJob:
    """A job that is not final, as the reconciler sees it: when its work was last known to be
    queued (``dispatched_at``, Unix seconds) and how often it was queued again."""

    id: str
    kind: JobKind
    dispatched_at: float
    republished: int


def item_outcome(index: int, resolution: Resolution) -> ItemOutcome:
    """The outcome a job records for its ``index``-th memory."""
    outcome: ItemOutcome = {"index": index, "id": resolution.memory.id, "outcome": resolution.outcome.value}
    if resolution.outcome is WriteOutcome.SUPERSEDED:
        outcome["superseded"] = resolution.target_id
    elif resolution.outcome is WriteOutcome.STORED and resolution.target_id:
        outcome["apart_from"] = resolution.target_id
    if resolution.reason:
        outcome["reason"] = resolution.reason
    outcome.update(resolution.effects.as_record())
    return outcome


# What a memorize job's result keeps of each memory: its outcome, and what its edges did.
_MEMORY_ITEM_KEYS = ("id", "outcome", "superseded", "apart_from", "reason", "superseded_by_links", "closed_goals")


def job_result(items: Sequence[ItemOutcome]) -> dict[str, Any]:
    """A finished job's result: its items in order and how many were stored or reinforced."""
    ordered = sorted(items, key=lambda item: int(item["index"]))
    outcomes = [str(item["outcome"]) for item in ordered]
    if "swapped" in outcomes:
        # A re-embed: what the swap reports (the model, and every memory and chunk it embedded).
        return {k: v for k, v in ordered[-1].items() if k not in ("index", "outcome")}
    if any(outcome in _DOCUMENT_OUTCOMES for outcome in outcomes):
        # An ingest job: each document's outcome, its chunks and, for a failure, the reason; and
        # where the workers' time went, summed over the documents.
        seconds: dict[str, float] = {}
        for item in ordered:
            for phase, value in item.get("seconds", {}).items():
                seconds[phase] = seconds.get(phase, 0.0) + float(value)
        return {
            "items": [{k: item[k] for k in ("id", "outcome", "chunks", "error") if k in item} for item in ordered],
            **{outcome: outcomes.count(outcome) for outcome in _DOCUMENT_OUTCOMES},
            "chunks": sum(int(item.get("chunks", 0)) for item in ordered if item["outcome"] == "indexed"),
            "seconds_by_phase": {phase: round(value, 3) for phase, value in seconds.items()},
        }
    return {
        "items": [{k: item[k] for k in _MEMORY_ITEM_KEYS if k in item} for item in ordered],
        **{outcome.value: outcomes.count(outcome.value) for outcome in WriteOutcome},
    }


class JobBoard(Protocol):
    """Job records and dead letters, shared by the gateway (reads) and the workers (writes)."""

    def create(self, job: Job, items: Sequence[JobItem] = ()) -> None:
        """Record a new job (``queued``) and the items that can queue its work again."""
        ...

    def get(self, job_id: str) -> Job:
        """The job, with its result once done. Raises ``JobNotFoundError``."""
        ...

    def start(self, job_id: str) -> None:
        """Mark the job running, unless it is already final or unknown."""
        ...

    def record(self, job_id: str, outcomes: dict[str, ItemOutcome]) -> None:
        """Record item outcomes (idempotent per incoming id); the job is done when all items have one."""
        ...

    def recorded(self, job_id: str, incoming_ids: Sequence[str]) -> set[str]:
        """Which of ``incoming_ids`` already have an outcome in the job (a redelivered task skips them)."""
        ...

    def fail(self, job_id: str, error: str) -> None:
        """Mark the job failed with ``error``, unless it is already done."""
        ...

    def add_dead_letter(self, letter: DeadLetter) -> None:
        """Keep a record of a task that failed for good."""
        ...

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """The most recent dead letters, newest first."""
        ...

    def recent(self, limit: int = 100, state: JobState | None = None) -> list[Job]:
        """The most recently created jobs (in ``state`` when given), newest first, without their
        per-item results (:meth:`get` has those)."""
        ...

    def ping(self) -> bool:
        """True when the board can be read and written."""
        ...

    def close(self) -> None:
        """Release what the board holds of its own (a file); later calls may fail."""
        ...


class MemoryJobBoard:
    """A board of this process alone: a bounded, thread-safe dict (a CLI call's, and where the shared
    file of :class:`workers.local_job_board.LocalJobBoard` cannot be opened)."""

    def __init__(self, ttl_s: int = 7 * 24 * 3600, max_jobs: int = 10_000) -> None:
        self._ttl = timedelta(seconds=ttl_s)
        self._max_jobs = max_jobs
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, tuple[Job, dict[str, ItemOutcome]]] = OrderedDict()
        self._dead: list[DeadLetter] = []

    def _expire(self, now: datetime) -> None:
        while self._jobs:
            oldest_id, (oldest, _) = next(iter(self._jobs.items()))
            if len(self._jobs) <= self._max_jobs and oldest.updated_at > now - self._ttl:
                break
            del self._jobs[oldest_id]
        self._dead = [d for d in self._dead if d.failed_at > now - self._ttl]

    def _touch(self, job_id: str, job: Job, items: dict[str, ItemOutcome]) -> None:
        self._jobs[job_id] = (job, items)
        self._jobs.move_to_end(job_id)

    def create(self, job: Job, items: Sequence[JobItem] = ()) -> None:
        # Jobs here run in the caller's thread: nothing can lose them, nothing needs queueing again.
        with self._lock:
            self._expire(utcnow())
            self._touch(job.id, replace(job), {})

    def recorded(self, job_id: str, incoming_ids: Sequence[str]) -> set[str]:
        with self._lock:
            entry = self._jobs.get(job_id)
            return set() if entry is None else {i for i in incoming_ids if i in entry[1]}

    def get(self, job_id: str) -> Job:
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry is None or entry[0].updated_at <= utcnow() - self._ttl:
                raise JobNotFoundError(f"no job {job_id!r} (unknown, or expired; this process keeps its jobs alone)")
            return replace(entry[0])

    def start(self, job_id: str) -> None:
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry and entry[0].state is JobState.QUEUED:
                self._touch(job_id, replace(entry[0], state=JobState.RUNNING, updated_at=utcnow()), entry[1])

    def record(self, job_id: str, outcomes: dict[str, ItemOutcome]) -> None:
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry is None:
                return
            job, items = entry
            items.update(outcomes)
            done = len(items)
            state, result = job.state, job.result
            if done >= job.total and not job.state.final:
                state, result = JobState.DONE, job_result(list(items.values()))
            elif not job.state.final:
                state = JobState.RUNNING
            self._touch(job_id, replace(job, done=done, state=state, result=result, updated_at=utcnow()), items)

    def fail(self, job_id: str, error: str) -> None:
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry and entry[0].state is not JobState.DONE:
                self._touch(
                    job_id, replace(entry[0], state=JobState.FAILED, error=error, updated_at=utcnow()), entry[1]
                )

    def add_dead_letter(self, letter: DeadLetter) -> None:
        with self._lock:
            self._dead.append(letter)

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        with self._lock:
            return list(reversed(self._dead[-limit:]))

    def recent(self, limit: int = 100, state: JobState | None = None) -> list[Job]:
        with self._lock:
            cutoff = utcnow() - self._ttl
            jobs = [job for job, _ in self._jobs.values() if job.updated_at > cutoff]
        jobs = [job for job in jobs if state is None or job.state is state]
        jobs.sort(key=lambda job: job.created_at, reverse=True)
        return [replace(job, result=None) for job in jobs[:limit]]

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        """Nothing to release: the jobs go with the process."""


_PREFIX = "hivemem:job:"
_DEAD = "hivemem:dead-letters"
# Sorted set of the jobs that are not final, scored by when their work was last known queued.
_OPEN = "hivemem:jobs:open"
# Sorted set of every job id, scored by creation time: the listing of recent jobs.
_RECENT = "hivemem:jobs:recent"
# How many ids the listing keeps, and reads at most when it filters by state.
_RECENT_KEPT = 10_000

# Finishing a job is one atomic step, so two workers recording its last items at the same moment
# cannot both miss (or both half-write) the transition to done; a done job leaves the open index.
# KEYS: job hash, items hash, payload, open index. ARGV: ttl, now, job id, then field/value pairs.
_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
local done = redis.call('HLEN', KEYS[2])
local total = tonumber(redis.call('HGET', KEYS[1], 'total'))
local state = redis.call('HGET', KEYS[1], 'state')
redis.call('HSET', KEYS[1], 'done', done, 'updated_at', ARGV[2])
if state ~= 'done' and state ~= 'failed' then
  if done >= total then
    redis.call('HSET', KEYS[1], 'state', 'done')
    redis.call('DEL', KEYS[3])
    redis.call('ZREM', KEYS[4], ARGV[3])
  else redis.call('HSET', KEYS[1], 'state', 'running') end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return done
"""

# KEYS: job hash, payload, open index. ARGV: from-states (comma list), to-state, now, ttl,
# error or '', job id. A job that becomes final leaves the open index.
_TRANSITION = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 0 end
if not string.find(',' .. ARGV[1] .. ',', ',' .. state .. ',', 1, true) then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'updated_at', ARGV[3])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[5]) end
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[2] == 'done' or ARGV[2] == 'failed' then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], ARGV[6])
end
return 1
"""

# Queue a job's work again, once: only while it is still open and still as stale as the caller
# saw it, so two reconcilers racing on one job re-publish it once. KEYS: job hash, open index.
# ARGV: job id, the score the caller saw, now. Returns the new republish count, or 0.
_REPUBLISH = """
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'republished', 1)
"""


class RedisJobBoard:
    """The distributed shape's board: one Redis hash per job, one per job's items, a sorted set of dead letters."""

    def __init__(self, client: redis.Redis, ttl_s: int = 7 * 24 * 3600, *, owns_client: bool = False) -> None:
        self._redis = client
        self._owns_client = owns_client
        self._ttl = ttl_s
        self._record = client.register_script(_RECORD)
        self._transition = client.register_script(_TRANSITION)
        self._republish = client.register_script(_REPUBLISH)

    @classmethod
    def from_url(cls, url: str, ttl_s: int = 7 * 24 * 3600) -> RedisJobBoard:
        """A board on the Redis server ``url`` names (the broker URL)."""
        import redis

        return cls(redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5), ttl_s, owns_client=True)

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import redis

        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise BrokerUnavailableError(f"the job broker is unreachable: {exc}") from exc

    def create(self, job: Job, items: Sequence[JobItem] = ()) -> None:
        key = _PREFIX + job.id
        fields: dict[FieldT, EncodableT] = {
            "kind": job.kind.value,
            "state": job.state.value,
            "total": job.total,
            "done": 0,
            "republished": 0,
            "created_at": job.created_at.isoformat(),
            "updated_at": job.updated_at.isoformat(),
            "owner": job.owner,
            "scopes": json.dumps(list(job.scopes)),
        }
        pipe = self._redis.pipeline()
        pipe.hset(key, mapping=fields)
        pipe.expire(key, self._ttl)
        stamp = job.created_at.timestamp()
        pipe.zadd(_RECENT, {job.id: stamp})
        pipe.zremrangebyscore(_RECENT, "-inf", stamp - self._ttl)
        pipe.zremrangebyrank(_RECENT, 0, -_RECENT_KEPT - 1)
        if items:
            pipe.set(key + ":payload", json.dumps(list(items)), ex=self._ttl)
            pipe.zadd(_OPEN, {job.id: job.created_at.timestamp()})
        self._call(pipe.execute)

    def recorded(self, job_id: str, incoming_ids: Sequence[str]) -> set[str]:
        if not incoming_ids:
            return set()
        found = self._call(self._redis.hmget, _PREFIX + job_id + ":items", list(incoming_ids))
        return {i for i, value in zip(incoming_ids, found, strict=True) if value is not None}

    def open_jobs(self, dispatched_before: float, limit: int = 1000) -> list[OpenJob]:
        """Open jobs whose work was last known queued before ``dispatched_before`` (Unix seconds),
        oldest first. Jobs whose record expired leave the index here."""
        raw = self._call(self._redis.zrangebyscore, _OPEN, "-inf", dispatched_before, 0, limit, True)
        if not raw:
            return []
        pipe = self._redis.pipeline()
        for member, _ in raw:
            pipe.hmget(_PREFIX + member.decode(), ["kind", "state", "republished"])
        fields = self._call(pipe.execute)
        found, gone = [], []
        for (member, score), (kind, state, republished) in zip(raw, fields, strict=True):
            job_id = member.decode()
            if kind is None or state is None or JobState(state.decode()).final:
                gone.append(job_id)
                continue
            found.append(OpenJob(job_id, JobKind(kind.decode()), float(score), int(republished or 0)))
        if gone:
            self._call(self._redis.zrem, _OPEN, *gone)
        return found

    def still_queued(self, job: OpenJob, at: float) -> None:
        """The job's work was seen in the broker at ``at``: look again a visibility timeout later."""
        self._call(self._redis.zadd, _OPEN, {job.id: at}, xx=True)

    def mark_republished(self, job: OpenJob, at: float) -> int:
        """Count one more re-publication of ``job``, unless another reconciler did it first
        (then 0). Returns how often it has been re-published."""
        return int(self._call(self._republish, keys=[_PREFIX + job.id, _OPEN], args=[job.id, job.dispatched_at, at]))

    def pending_items(self, job_id: str) -> list[JobItem]:
        """The items of an open job that have no outcome yet, as they were first queued."""
        pipe = self._redis.pipeline()
        pipe.get(_PREFIX + job_id + ":payload")
        pipe.hkeys(_PREFIX + job_id + ":items")
        payload, done = self._call(pipe.execute)
        if payload is None:
            return []
        finished = {key.decode() for key in done}
        items: list[JobItem] = json.loads(payload)
        return [item for item in items if item_key(item) not in finished]

    def get(self, job_id: str) -> Job:
        pipe = self._redis.pipeline()
        pipe.hgetall(_PREFIX + job_id)
        pipe.hvals(_PREFIX + job_id + ":items")
        raw, items = self._call(pipe.execute)
        if not raw:
            raise JobNotFoundError(f"no job {job_id!r} (unknown, or expired)")
        job = _job_of(job_id, raw)
        if job.state is JobState.DONE:
            job.result = job_result([json.loads(v) for v in items])
        return job

    def recent(self, limit: int = 100, state: JobState | None = None) -> list[Job]:
        # Filtering by state reads every kept id; without a filter, just the newest ``limit``.
        last = _RECENT_KEPT - 1 if state is not None else max(0, limit - 1)
        ids = [member.decode() for member in self._call(self._redis.zrevrange, _RECENT, 0, last)]
        pipe = self._redis.pipeline()
        for job_id in ids:
            pipe.hgetall(_PREFIX + job_id)
        found, gone = [], []
        for job_id, raw in zip(ids, self._call(pipe.execute), strict=True):
            if not raw:
                gone.append(job_id)
                continue
            job = _job_of(job_id, raw)
            if state is None or job.state is state:
                found.append(job)
        if gone:
            self._call(self._redis.zrem, _RECENT, *gone)
        return found[:limit]

    def _transition_keys(self, job_id: str) -> list[str]:
        return [_PREFIX + job_id, _PREFIX + job_id + ":payload", _OPEN]

    def start(self, job_id: str) -> None:
        args = ["queued", "running", _now(), self._ttl, "", job_id]
        self._call(self._transition, keys=self._transition_keys(job_id), args=args)

    def record(self, job_id: str, outcomes: dict[str, ItemOutcome]) -> None:
        pairs: list[str] = []
        for incoming_id, outcome in outcomes.items():
            pairs += [incoming_id, json.dumps(outcome)]
        keys = [_PREFIX + job_id, _PREFIX + job_id + ":items", _PREFIX + job_id + ":payload", _OPEN]
        self._call(self._record, keys=keys, args=[self._ttl, _now(), job_id, *pairs])

    def fail(self, job_id: str, error: str) -> None:
        args = ["queued,running,failed", "failed", _now(), self._ttl, error or "failed", job_id]
        self._call(self._transition, keys=self._transition_keys(job_id), args=args)

    def add_dead_letter(self, letter: DeadLetter) -> None:
        member = json.dumps(
            {
                "task": letter.task,
                "job_ids": list(letter.job_ids),
                "error": letter.error,
                "attempts": letter.attempts,
                "failed_at": letter.failed_at.isoformat(),
            }
        )
        stamp = letter.failed_at.timestamp()
        pipe = self._redis.pipeline()
        pipe.zadd(_DEAD, {member: stamp})
        pipe.zremrangebyscore(_DEAD, "-inf", stamp - self._ttl)
        self._call(pipe.execute)

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        raw = self._call(self._redis.zrevrange, _DEAD, 0, max(0, limit - 1))
        letters = []
        for member in raw:
            data = json.loads(member)
            letters.append(
                DeadLetter(
                    task=data["task"],
                    job_ids=tuple(data["job_ids"]),
                    error=data["error"],
                    attempts=int(data["attempts"]),
                    failed_at=datetime.fromisoformat(data["failed_at"]),
                )
            )
        return letters

    def prune(self) -> int:
        """Drop dead letters older than the retention time; returns how many went."""
        cutoff = utcnow().timestamp() - self._ttl
        return int(self._call(self._redis.zremrangebyscore, _DEAD, "-inf", cutoff))

    def ping(self) -> bool:
        try:
            return bool(self._call(self._redis.ping))
        except BrokerUnavailableError:
            return False

    def close(self) -> None:
        """Close the Redis client if this board made it (:meth:`from_url`); one handed in belongs to
        whoever made it (a worker's context shares its client with the other parts)."""
        if self._owns_client:
            self._redis.close()

    def queue_lengths(self, queues: Sequence[str]) -> dict[str, int]:
        """Messages waiting in each Celery queue on this Redis (every priority lane counted)."""
        # kombu keeps a queue's priority lanes under the queue's name plus "\x06\x16" and the lane.
        keys = {q: [q, *(f"{q}\x06\x16{lane}" for lane in range(10))] for q in queues}
        pipe = self._redis.pipeline()
        for names in keys.values():
            for key in names:
                pipe.llen(key)
        lengths = iter(self._call(pipe.execute))
        return {q: sum(int(next(lengths)) for _ in names) for q, names in keys.items()}

    def persistence_warning(self) -> str | None:
        """A warning when this board's Redis keeps nothing across a restart (see :mod:`workers.broker_persistence`)."""
        return persistence_warning(self._redis)


def _job_of(job_id: str, raw: dict[bytes, bytes]) -> Job:
    """A job from its Redis hash (no result: that is in the items hash)."""
    fields = {k.decode(): v.decode() for k, v in raw.items()}
    return Job(
        id=job_id,
        kind=JobKind(fields["kind"]),
        state=JobState(fields["state"]),
        total=int(fields["total"]),
        done=int(fields.get("done", 0)),
        error=fields.get("error"),
        created_at=datetime.fromisoformat(fields["created_at"]),
        updated_at=datetime.fromisoformat(fields["updated_at"]),
        owner=fields.get("owner", ""),
        scopes=tuple(json.loads(fields.get("scopes", "[]"))),
    )


def _now() -> str:
    return utcnow().isoformat()
