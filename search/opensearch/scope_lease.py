"""Per-scope leases on OpenSearch: the serialization of planned writes (resolution by meaning).

A planned write reads a scope's nearest memories, decides, then writes; two of them interleaving in
one scope would each decide without the other's memory (two near-duplicates both stored). Content
claims (:mod:`search.opensearch.writes`) keep one memory per exact content, but cannot order
decisions by meaning, so a planned write holds its scopes' leases for the whole unit.

Why a lease document and not the claim-and-``_seq_no`` protocol extended: a decision reads up to
fifty neighbours, and a conditional write on each of them would still miss a neighbour written
between the read and the write (it was not there to be versioned). A lease is one document per
scope in the claims index (id :func:`search.opensearch.docs.scope_lease_id`), created with
``op_type=create`` so of two writers exactly one holds it, and deleted on the version it was taken
at. Its ``memory_id`` field names the holder (a token, not a memory), ``claimed_at`` when it was
taken. A holder that died leaves it behind: once older than ``lease_s`` it is taken over on its
version, so of several waiters one wins. A live holder renews its lease while it runs (a thread
moves ``claimed_at`` on, on the version it holds), so ``lease_s`` is seconds, not a guess at how
long a unit may take. This is the per-scope serialization of the distributed
shape's Redis resolve lock (``workers.scope_lock``), kept by the store itself so every process that
writes a cluster, with or without a broker, obeys it.

The same documents serve one lock that is no scope's: the sleep pass's, held for minutes by one
process at a time (:meth:`ScopeLeases.held_if_free`), where no broker holds it.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from hivemem.errors import StoreUnavailableError
from search.opensearch.bodies import IndexNames
from search.opensearch.cluster import Cluster
from search.opensearch.docs import from_iso, scope_lease_id, to_iso
from search.opensearch.errors import Conflict

__all__ = ["SCOPE_LEASE_RENEW_S", "SCOPE_LEASE_S", "ScopeLeases"]

SCOPE_LEASE_S = 15.0
"""How long a scope's lease outlives a holder that stopped renewing it. Its age is read on the
taker's clock against the holder's: the margin over the renewal covers clocks of two hosts that
differ by seconds, where a shorter lease would be taken from a live holder."""
SCOPE_LEASE_RENEW_S = 2.0

Json = dict[str, Any]


@dataclass(slots=True)
class _Held:
    """A lease as held: its document and the version that a renewal and the release are conditioned
    on (a renewal moves it on)."""

    doc_id: str
    scope: str
    token: str
    seq_no: int
    primary_term: int
    lost: bool = False


class ScopeLeases:
    """Takes and releases the lease documents of scopes in the claims index of ``names``."""

    def __init__(
        self, cluster: Cluster, names: IndexNames, *, lease_s: float, wait_s: float, renew_every_s: float | None = None
    ) -> None:
        """``renew_every_s``: a scope's lease held longer than this is renewed that often, so a live
        holder keeps it however long its unit runs and ``lease_s`` can be short (a dead holder's is
        taken over that soon); None: never renewed (the sleep pass's, held for its whole run)."""
        self._cluster = cluster
        self._names = names
        self._lease_s = lease_s
        self._wait_s = wait_s
        self._renew_every_s = renew_every_s

    @contextmanager
    def held(self, scopes: Iterable[str]) -> Iterator[None]:
        """Hold the lease of every scope in ``scopes`` for the block.

        Taken in sorted order, so two units that write the same scopes cannot deadlock. Raises
        ``StoreUnavailableError`` when a lease stays held by a live writer for ``wait_s``.
        """
        with ExitStack() as stack:
            held: list[_Held] = []
            for scope in sorted(set(scopes)):
                taken = self._take(scope)
                stack.callback(self._release, taken)
                held.append(taken)
            if self._renew_every_s is not None:
                stack.enter_context(self._renewed(held, self._renew_every_s))
            yield

    @contextmanager
    def _renewed(self, held: list[_Held], every_s: float) -> Iterator[None]:
        """Renew ``held`` every ``every_s`` while the block runs; the thread is gone when it ends,
        so the release reads the last version. A unit shorter than ``every_s`` renews nothing."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(every_s):
                for lease in held:
                    if not lease.lost:
                        self._renew(lease)

        renewer = threading.Thread(target=renew, name="scope-lease-renewer", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()

    def _renew(self, lease: _Held) -> None:
        """Move ``lease``'s ``claimed_at`` to now on the version held; one taken over (this holder
        stalled past ``lease_s``) is the new holder's and left alone."""
        try:
            renewed = self._replace(lease, self._body(lease.scope, lease.token), "renewing a scope lease")
        except StoreUnavailableError:
            return  # the cluster is away: the unit's own requests will say so; try again next time
        if renewed is None:
            lease.lost = True
        else:
            lease.seq_no, lease.primary_term = renewed.seq_no, renewed.primary_term

    def _body(self, scope: str, token: str) -> Json:
        return {"memory_id": token, "scope": scope, "content_hash": "", "claimed_at": to_iso(datetime.now(UTC))}

    @contextmanager
    def held_if_free(self, doc_id: str, *, wait: bool, poll_s: float = 1.0) -> Iterator[bool]:
        """Whether the block holds the lease ``doc_id`` (not a scope's: the sleep pass's, say): with
        ``wait``, always, once its holder has released it or held it past ``lease_s``, asked again
        about every ``poll_s``; without, only if it is free now (False: another process holds it)."""
        taken = self._try_take(doc_id, "")
        while taken is None and wait:
            time.sleep(poll_s * (0.5 + random.random()))
            taken = self._try_take(doc_id, "")
        if taken is None:
            yield False
            return
        try:
            yield True
        finally:
            self._release(taken)

    def _try_take(self, doc_id: str, scope: str) -> _Held | None:
        """The lease, created or taken over from a holder older than ``lease_s``; None while it is held."""
        body = self._body(scope, uuid.uuid4().hex)
        client = self._cluster.client
        try:
            created = self._cluster.call(
                "taking a lease",
                partial(client.index, index=self._names.claims, id=doc_id, body=body, op_type="create"),
            )
            return _Held(doc_id, scope, body["memory_id"], int(created["_seq_no"]), int(created["_primary_term"]))
        except Conflict:
            pass
        current = self._cluster.get_doc(self._names.claims, doc_id)
        if current is not None and current.get("found", False):
            age = (datetime.now(UTC) - from_iso(current["_source"]["claimed_at"])).total_seconds()
            if age >= self._lease_s:
                return self._take_over(doc_id, scope, body, current)
        return None

    def _take(self, scope: str) -> _Held:
        doc_id = scope_lease_id(scope)
        deadline = time.monotonic() + self._wait_s
        attempt = 0
        while True:
            taken = self._try_take(doc_id, scope)
            if taken is not None:
                return taken
            if time.monotonic() >= deadline:
                raise StoreUnavailableError(
                    f"scope {scope!r} stayed leased by another writer for {self._wait_s:.0f}s; try again"
                )
            attempt += 1
            # A unit holds a lease for tens of milliseconds: poll often at first, then less.
            time.sleep(min(0.05, 0.002 * attempt) * (0.5 + random.random()))

    def _take_over(self, doc_id: str, scope: str, body: Json, stale: Json) -> _Held | None:
        """Replace a dead holder's lease on the version read; None when another waiter won it."""
        seen = _Held(doc_id, scope, body["memory_id"], int(stale["_seq_no"]), int(stale["_primary_term"]))
        return self._replace(seen, body, "taking over a stale scope lease")

    def _replace(self, lease: _Held, body: Json, action: str) -> _Held | None:
        """``body`` in place of ``lease``'s document, on the version ``lease`` names: the lease as
        written (held by ``body``'s token), or None when the document has moved on since."""
        client = self._cluster.client
        try:
            written = self._cluster.call(
                action,
                partial(
                    client.index,
                    index=self._names.claims,
                    id=lease.doc_id,
                    body=body,
                    if_seq_no=lease.seq_no,
                    if_primary_term=lease.primary_term,
                ),
            )
        except Conflict:
            return None
        return _Held(
            lease.doc_id, lease.scope, body["memory_id"], int(written["_seq_no"]), int(written["_primary_term"])
        )

    def _release(self, held: _Held) -> None:
        if held.lost:
            return
        # On the version taken: a lease that expired under a slow holder and was taken over is the
        # new holder's, and this delete then finds a newer version (409) and leaves it.
        line = {
            "delete": {
                "_index": self._names.claims,
                "_id": held.doc_id,
                "if_seq_no": held.seq_no,
                "if_primary_term": held.primary_term,
            }
        }
        self._cluster.bulk([line], refresh="false")
