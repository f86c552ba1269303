"""What the core reports about its own work, for a server's metrics: recall stage times, what the
rerank stage did, embedder batch sizes. The core calls an :class:`Observer`; the server's
(:mod:`api.http.metrics`) turns the calls into Prometheus series. Nothing is observed by default."""

from __future__ import annotations

from typing import Protocol

__all__ = ["NO_OBSERVER", "NoObserver", "Observer"]


class Observer(Protocol):
    """Told of each step as it happens; must be cheap and never raise."""

    def recall_stage(self, stage: str, seconds: float) -> None:
        """One recall stage took ``seconds`` (``admission``, ``legs``, ``fetch``, ``rerank``, ``score``)."""
        ...

    def rerank(self, outcome: str) -> None:
        """What one recall's rerank stage did (``applied``, ``gated``, ``late``, ``unavailable``, ``off``)."""
        ...

    def embed_batch(self, lane: str, size: int) -> None:
        """The embedder ran one batch of ``size`` texts of ``lane`` (``queries``, ``passages``, ``documents``)."""
        ...


class NoObserver:
    """Observes nothing."""

    def recall_stage(self, stage: str, seconds: float) -> None:
        return None

    def rerank(self, outcome: str) -> None:
        return None

    def embed_batch(self, lane: str, size: int) -> None:
        return None


NO_OBSERVER: Observer = NoObserver()
