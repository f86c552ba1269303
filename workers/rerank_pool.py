"""The gateway side of the rerank pool: reranking sent to the ``rerank`` queue, answered within a deadline.

Workers started with ``--queues rerank`` (``--device cuda`` for a GPU pool) score the pairs with
the model ``HIVEMEM_RERANK_MODEL`` names (workers/models/rerankers.py); the gateway loads no model. Each
request carries ``expires``, so a message nobody took within the deadline is dropped unread rather
than scored for a caller who has gone. A pool that failed or was late is skipped for
``HIVEMEM_RERANK_POOL_COOLDOWN_S``, so while it is down every recall answers in first-stage order at
once instead of waiting out the deadline each time.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Sequence

from celery import Celery
from celery.exceptions import TaskRevokedError
from celery.exceptions import TimeoutError as CeleryTimeout

from hivemem.config import Settings
from hivemem.errors import RerankLateError, RerankUnavailableError
from workers.celery_app import build_celery
from workers.queues import TASK_QUEUE, Task
from workers.rerank_pool_tuning import RerankPoolTuning

__all__ = ["PoolReranker"]

log = logging.getLogger(__name__)

_POLL_S = 0.005  # one GET on the result backend: cheap next to the scoring it waits for


class PoolReranker:
    """A :class:`hivemem.rerank.Reranker` whose scoring runs on the rerank pool. Thread-safe.

    ``score`` raises ``RerankLateError`` when the pool does not answer within the deadline and
    ``RerankUnavailableError`` when it cannot be reached, fails, or is cooling off after either.
    ``fallbacks`` counts both, by kind, for the status report.
    """

    def __init__(self, settings: Settings, app: Celery | None = None, tuning: RerankPoolTuning | None = None) -> None:
        if app is None:
            app = build_celery(settings)
            # The result backend retries a lost connection for about 20 s by default; a rerank
            # waits out no outage, so one quick retry, then the caller gets first-stage order.
            options = dict(app.conf.result_backend_transport_options or {})
            options["retry_policy"] = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}
            app.conf.result_backend_transport_options = options
        self._app = app
        self._model_id = f"pool:{settings.rerank_model}"
        tuning = tuning or RerankPoolTuning()
        self._deadline_s = tuning.rerank_deadline_ms / 1000
        self._cooldown_s = tuning.rerank_pool_cooldown_s
        self._lock = threading.Lock()
        self._down_until = 0.0
        self.fallbacks: Counter[str] = Counter()

    @property
    def model_id(self) -> str:
        return self._model_id

    def _fell_back(self, kind: str) -> None:
        with self._lock:
            self.fallbacks[kind] += 1
            self._down_until = time.monotonic() + self._cooldown_s

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        with self._lock:
            cooling = time.monotonic() < self._down_until
            if cooling:
                self.fallbacks["cooling"] += 1
        if cooling:
            raise RerankUnavailableError("the rerank pool failed or was late recently; skipped while it cools off")
        deadline = time.monotonic() + self._deadline_s
        try:
            # No publish retries: the deadline is shorter than any wait for a broker to come back.
            result = self._app.send_task(
                Task.RERANK,
                args=[query, list(passages)],
                queue=TASK_QUEUE[Task.RERANK],
                expires=self._deadline_s,
                retry=False,
            )
        except Exception as exc:  # kombu and redis errors alike: the broker is not there
            self._fell_back("unreachable")
            raise RerankUnavailableError(f"cannot reach the rerank pool: {exc}") from exc
        try:
            # Polled, not ``result.get(timeout=...)``: Celery checks that timeout only between waits on
            # the result backend of up to a second each, so a 50 ms deadline ran to 200 ms and more.
            while not result.ready():
                if time.monotonic() >= deadline:
                    raise CeleryTimeout
                time.sleep(_POLL_S)
            scores = result.get(timeout=self._deadline_s, propagate=True, disable_sync_subtasks=False)
        except (CeleryTimeout, TaskRevokedError) as exc:  # revoked: it expired before a worker took it
            self._fell_back("late")
            raise RerankLateError(f"the rerank pool did not answer within {self._deadline_s * 1000:.0f} ms") from exc
        except Exception as exc:
            self._fell_back("failed")
            raise RerankUnavailableError(f"the rerank pool failed: {exc}") from exc
        finally:
            try:
                result.forget()
            except Exception:  # the answer expires with the backend's TTL anyway
                log.debug("could not drop a rerank result", exc_info=True)
        if (
            not isinstance(scores, list)
            or len(scores) != len(passages)
            or not all(isinstance(s, int | float) and math.isfinite(s) for s in scores)
        ):
            self._fell_back("failed")
            raise RerankUnavailableError(f"the rerank pool answered {len(scores) if isinstance(scores, list) else 0} "
                                         f"scores for {len(passages)} passages")  # fmt: skip
        return [float(s) for s in scores]
