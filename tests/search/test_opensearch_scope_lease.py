"""The scope leases that serialize planned writes on OpenSearch (search/opensearch/scope_lease.py):
released after every unit, failed or not; a dead holder's lease taken over once stale; a live one
waited for and then refused; a lease taken over meanwhile never deleted by its former holder."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hivemem.embedding import HashEmbedder
from hivemem.errors import StoreUnavailableError
from hivemem.model import Memory, WriteOutcome
from hivemem.resolution import Neighbour, Resolution
from search.opensearch.client import parse_url
from search.opensearch.cluster import Cluster
from search.opensearch.docs import scope_lease_id, to_iso
from search.opensearch.scope_lease import ScopeLeases
from tests.contract.test_memories_contract import make
from tests.opensearch_backend import OpenSearchBackend
from tests.search.test_opensearch_store import store

pytestmark = pytest.mark.opensearch
__all__ = ["store"]  # the fixture of the store tests, imported for pytest


def _leases(store: Any, backend: OpenSearchBackend, *, lease_s: float, wait_s: float) -> ScopeLeases:
    return ScopeLeases(Cluster(store.client, parse_url(backend.url)), store.names, lease_s=lease_s, wait_s=wait_s)


def _lease_doc(store: Any, scope: str) -> dict[str, Any] | None:
    doc_id = scope_lease_id(scope)
    if not store.client.exists(index=store.names.claims, id=doc_id):
        return None
    return dict(store.client.get(index=store.names.claims, id=doc_id)["_source"])


def _leave_lease(store: Any, scope: str, *, holder: str, taken: datetime) -> None:
    body = {"memory_id": holder, "scope": scope, "content_hash": "", "claimed_at": to_iso(taken)}
    store.client.index(index=store.names.claims, id=scope_lease_id(scope), body=body, refresh="true")


def _store_it(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
    return Resolution(WriteOutcome.STORED, memory)


def test_a_unit_releases_its_lease_whether_it_succeeds_or_fails(store: Any, embedder: HashEmbedder) -> None:
    store.write_planned([make(embedder, "Deploys run at noon.", scope="p")], _store_it, neighbours=0)
    assert _lease_doc(store, "p") is None

    def fail(memory: Memory, held: Memory | None, neighbours: Sequence[Neighbour]) -> Resolution:
        raise RuntimeError("the policy failed")

    with pytest.raises(RuntimeError):
        store.write_planned([make(embedder, "Invoices go out monthly.", scope="p")], fail, neighbours=0)
    assert _lease_doc(store, "p") is None
    assert store.count(["p"]) == 1


def test_a_dead_writers_lease_is_taken_over_once_stale(store: Any, embedder: HashEmbedder) -> None:
    _leave_lease(store, "p", holder="dead-worker", taken=datetime.now(UTC) - timedelta(hours=1))
    memory = make(embedder, "The nightly job rebuilds the index.", scope="p")
    assert store.write_planned([memory], _store_it, neighbours=0)[0].outcome is WriteOutcome.STORED
    assert store.get(memory.id) == memory
    assert _lease_doc(store, "p") is None


def test_a_live_lease_is_waited_for_then_refused_and_nothing_is_written(
    store: Any, embedder: HashEmbedder, opensearch_backend: OpenSearchBackend
) -> None:
    _leave_lease(store, "p", holder="busy-worker", taken=datetime.now(UTC))
    leases = _leases(store, opensearch_backend, lease_s=3600, wait_s=0.3)
    with pytest.raises(StoreUnavailableError, match="stayed leased"), leases.held(["p"]):
        pytest.fail("the lease of a live holder was taken")
    assert (_lease_doc(store, "p") or {})["memory_id"] == "busy-worker"
    # Other scopes are not held back by it.
    store.write_planned([make(embedder, "Elsewhere, writes go on.", scope="q")], _store_it, neighbours=0)
    assert store.count(["q"]) == 1 and store.count(["p"]) == 0


def test_a_holder_never_releases_a_lease_taken_over_from_it(store: Any, opensearch_backend: OpenSearchBackend) -> None:
    leases = _leases(store, opensearch_backend, lease_s=3600, wait_s=1)
    with leases.held(["p", "q"]):
        assert {(_lease_doc(store, s) or {}).get("scope") for s in ("p", "q")} == {"p", "q"}
        # It ran past its lease and another writer took "p" over on a newer version.
        _leave_lease(store, "p", holder="next-worker", taken=datetime.now(UTC))
    assert (_lease_doc(store, "p") or {})["memory_id"] == "next-worker"
    assert _lease_doc(store, "q") is None


def test_a_live_holder_renews_its_lease_and_a_dead_ones_is_taken_within_it(
    store: Any, opensearch_backend: OpenSearchBackend
) -> None:
    # A short lease renewed twelve times within it (a busy machine may delay a renewal by seconds
    # and the holder still keeps it): the holder outlives it twice over.
    leases = _leases(store, opensearch_backend, lease_s=3, wait_s=0)
    renewing = ScopeLeases(
        Cluster(store.client, parse_url(opensearch_backend.url)), store.names, lease_s=3, wait_s=0, renew_every_s=0.25
    )
    with renewing.held(["p"]):
        first = (_lease_doc(store, "p") or {})["claimed_at"]
        # Until the lease document shows a renewal, then past three lease lengths of renewals.
        while (_lease_doc(store, "p") or {})["claimed_at"] == first:
            time.sleep(0.05)
        renewed_at = time.monotonic()
        while time.monotonic() - renewed_at < 6:
            with pytest.raises(StoreUnavailableError, match="stayed leased"), leases.held(["p"]):
                pytest.fail("a renewed lease was taken over")
            time.sleep(0.3)
    assert _lease_doc(store, "p") is None  # released on the version the last renewal left
    # A holder that stops renewing (killed) leaves a lease taken over once it is older than lease_s.
    _leave_lease(store, "p", holder="killed-worker", taken=datetime.now(UTC) - timedelta(seconds=3.1))
    with leases.held(["p"]):
        assert (_lease_doc(store, "p") or {})["memory_id"] != "killed-worker"
