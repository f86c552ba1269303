"""Jobs: the state of work done in the background, and the tasks that failed for good."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.http.deps import CallerDep, ServiceDep
from hivemem.answers import DeadLetterPublic, JobPublic
from hivemem.jobs import JobState

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["jobs"])


@router.get("/jobs/{job_id}", response_model=JobPublic)
def get_job(job_id: str, service: ServiceDep, caller: CallerDep) -> JobPublic:
    """A job: `state` (`queued`, `running`, `done`, `failed`), `progress` (0-1), `result` once done
    (each item's memory id and outcome), `error` once failed. Its owner, or an admin of every scope
    it writes in, reads it; 404 for anyone else, and when unknown or expired."""
    return service.job(job_id, caller)


@router.get("/jobs", response_model=list[JobPublic])
def list_jobs(
    service: ServiceDep,
    caller: CallerDep,
    state: Annotated[JobState | None, Query(description="Only jobs in this state.")] = None,
    limit: int = Query(default=100, ge=1, le=1000, description="How many, newest first."),
) -> list[JobPublic]:
    """The newest jobs, newest first, with their progress (`done` of `total` items) but not their
    per-item results (`GET /v1/jobs/{job_id}` has those). Admin on `*`: jobs name every scope's work."""
    return service.jobs(caller, state=state, limit=limit)


@router.get("/dead-letters", response_model=list[DeadLetterPublic])
def dead_letters(
    service: ServiceDep,
    caller: CallerDep,
    limit: int = Query(default=100, ge=1, le=1000, description="How many, newest first."),
) -> list[DeadLetterPublic]:
    """Tasks that failed for good (retries exhausted, or an error no retry fixes), newest first.
    Admin on `*`: their errors may quote any scope's content."""
    return service.dead_letters(caller, limit)


@router.get("/reembed", response_model=JobPublic)
def reembed_job(service: ServiceDep, caller: CallerDep) -> JobPublic:
    """The job re-embedding the store, started when the server found its store holding another
    embedding model's vectors than `HIVEMEM_EMBED_MODEL` (admins on `*`): recall serves the old
    vectors until `state` is `done`; `result` then names the model and what was re-embedded. 404
    when no re-embedding ran."""
    return service.reembed_job(caller)
