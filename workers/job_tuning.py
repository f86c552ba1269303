"""The tuning of the job plumbing: how long a call waits for its job, retries, how long job records
are kept, when a lost or orphaned job is queued again, and how memorize calls are batched.

Each default is written here once; ``HIVEMEM_<NAME>`` or the config file's ``[tuning]`` table
overrides it (:mod:`hivemem.tuning`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from hivemem.tuning import Tuning

__all__ = ["JobTuning"]


class JobTuning(Tuning):
    """The numbers of jobs on the broker and in-process."""

    group_title: ClassVar[str] = "Jobs"

    memorize_wait_s: float = Field(
        default=2.0,
        ge=0.0,
        le=60.0,
        description="With a broker: how long `memorize` waits for its job before answering 202 with the job id.",
    )
    job_retries: int = Field(
        default=5, ge=0, le=100, description="Retries of a job whose store is unreachable, with exponential backoff."
    )
    job_retry_backoff_max_s: int = Field(
        default=60, ge=1, le=3600, description="Longest wait between two retries of a job."
    )
    job_ttl_s: int = Field(
        default=7 * 24 * 3600,
        ge=60,
        description="How long job records and dead letters are kept in the broker after their last change.",
    )
    broker_visibility_timeout_s: int = Field(
        default=3600,
        ge=1,
        description="Seconds before a job taken by a worker that died is handed to another worker. Longer than "
        "the slowest job, or a slow job runs twice (harmless: jobs are idempotent, but wasteful).",
    )
    job_republish_limit: int = Field(
        default=3,
        ge=0,
        le=100,
        description="How often a job whose broker message was lost is queued again before it fails with a dead letter.",
    )
    reconcile_interval_s: int = Field(
        default=60,
        ge=1,
        le=86_400,
        description="How often beat looks for accepted jobs whose broker message was lost (each worker also "
        "looks once at start-up); a job counts as lost once it is older than the visibility timeout.",
    )
    embed_batch_window_ms: int = Field(
        default=5,
        ge=0,
        le=1000,
        description="With a broker: memorize calls arriving within this window are embedded as one batch.",
    )
