"""Queue and task names: the one vocabulary the gateway, the workers and the deploy files share.

Names are plain strings so the gateway can queue a task by name without importing the worker code.
"""

from __future__ import annotations

__all__ = ["JOBS_HEADER", "QUEUES", "TASK_QUEUE", "Task"]

# Listed from most to least urgent: a worker consuming several queues drains them in this order
# (Redis `queue_order_strategy = priority`). `resolve` comes before `embed` so work already embedded
# is finished before new work starts (otherwise a steady stream of embeds starves the writes and
# every caller waits); bulk memorize (`bulk`) and document ingestion (`ingest`) only run when
# interactive work is done.
QUEUES = ("resolve", "embed", "rerank", "maintenance", "consolidate", "bulk", "ingest")


class Task:
    """Registered task names."""

    EMBED = "hivemem.embed"
    RESOLVE = "hivemem.resolve"
    MEMORIZE_BULK = "hivemem.memorize_bulk"
    INGEST = "hivemem.ingest"
    RECORD_ACCESS = "hivemem.record_access"
    PRUNE_DEAD_LETTERS = "hivemem.prune_dead_letters"
    RECONCILE = "hivemem.reconcile"
    SLEEP = "hivemem.sleep"
    RERANK = "hivemem.rerank"


TASK_QUEUE = {
    Task.EMBED: "embed",
    Task.RESOLVE: "resolve",
    Task.MEMORIZE_BULK: "bulk",
    Task.INGEST: "ingest",
    Task.RECORD_ACCESS: "maintenance",
    Task.PRUNE_DEAD_LETTERS: "maintenance",
    Task.RECONCILE: "maintenance",
    Task.SLEEP: "consolidate",
    Task.RERANK: "rerank",
}

# The message header that names the jobs a task carries work for (a list of job ids), so that
# the reconciler can tell a job whose work waits in the broker from one whose message was lost.
JOBS_HEADER = "hivemem_jobs"
