"""The lock-free write protocol of the OpenSearch store: content claims and conditional writes.

One memory holds each (scope, content hash): the claim document of that pair (in the ``-claims``
alias, id :func:`search.opensearch.docs.claim_id`) names it, and is created with
``op_type=create`` so that of two racing writers exactly one wins. Memories are written and
deleted on the ``_seq_no``/``_primary_term`` they were read at, and a writer that loses (409)
reads again, backs off and retries. :class:`MemoryWriter` is every write to the memories index,
with the versioned reads those writes are conditioned on; it must be read as a whole to be
trusted, which is why it is one module. :class:`search.opensearch.OpenSearchStore` composes it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from hivemem.errors import DuplicateMemoryError, MemoryNotFoundError, StoreUnavailableError
from hivemem.model import DuplicatePolicy, Memory
from hivemem.resolution import Resolution
from search.base import not_written
from search.opensearch.bodies import IndexNames
from search.opensearch.cluster import Cluster
from search.opensearch.docs import STAMP_FIELD, claim_id, from_iso, memory_doc, memory_from_doc, to_iso
from search.opensearch.errors import Conflict

__all__ = ["MemoryWriter", "Versioned"]

Json = dict[str, Any]

# A claim whose memory is missing (or holds other content) is another writer in flight between its
# two requests, or the leftover of a writer that died there. Wait for the first; take over the
# second once the claim is older than this lease.
_CLAIM_LEASE_S = 30.0
_MAX_ATTEMPTS = 200


@dataclass(frozen=True, slots=True)
class Versioned:
    """A memory as read, with the sequence number and primary term that guard a conditional write."""

    memory: Memory
    seq_no: int
    primary_term: int
    stamp_ms: int | None = None  # the document's write stamp (docs.STAMP_FIELD); None before stamps

    @classmethod
    def from_doc(cls, doc: Json) -> Versioned:
        """The memory a GET or ``_mget`` document holds, with its version."""
        stamp = doc["_source"].get(STAMP_FIELD)
        return cls(
            memory_from_doc(doc["_source"]),
            int(doc["_seq_no"]),
            int(doc["_primary_term"]),
            None if stamp is None else int(stamp),
        )


class _Conflict(Exception):
    """A conditional write lost to another writer; the caller reads and decides again."""


def _backoff(attempt: int) -> None:
    # Jitter spreads writers that collided on one document, so one of them wins the next round.
    time.sleep(min(0.2, 0.002 * (2 ** min(attempt, 7))) * random.random())


def _claim_body(memory: Memory) -> Json:
    """The claim document naming ``memory`` the holder of its (scope, content hash), taken now."""
    return {
        "memory_id": memory.id,
        "scope": memory.scope,
        "content_hash": memory.content_hash,
        "claimed_at": to_iso(datetime.now(UTC)),
    }


class MemoryWriter:
    """Writes to the memories index of ``names``, each guarded by a claim and a version."""

    def __init__(self, cluster: Cluster, names: IndexNames, dimension: int) -> None:
        self._cluster = cluster
        self._names = names
        self._dimension = dimension

    # -- versioned reads -----------------------------------------------------------------------

    def read(self, memory_id: str) -> Versioned | None:
        """The memory with that id as a realtime GET sees it, or None."""
        doc = self._cluster.get_doc(self._names.memories, memory_id)
        if doc is None or not doc.get("found", False):
            return None
        return Versioned.from_doc(doc)

    def read_many(self, memory_ids: Sequence[str], *, vectors: bool = True) -> list[Versioned]:
        """The memories with those ids that exist, in one ``_mget``; without their vectors (most of a
        document) unless ``vectors``."""
        if not memory_ids:
            return []
        ids = list(memory_ids)
        client = self._cluster.client
        leave_out = {} if vectors else {"_source_excludes": ["embedding"]}
        response = self._cluster.call(
            "reading memories", lambda: client.mget(index=self._names.memories, body={"ids": ids}, **leave_out)
        )
        return [Versioned.from_doc(doc) for doc in response["docs"] if doc.get("found")]

    def holder(self, scope: str, content_hash: str) -> Versioned | None:
        """The memory whose claim is on (scope, content hash), if it still holds that content."""
        held = self._cluster.get_doc(self._names.claims, claim_id(scope, content_hash))
        if held is None or not held.get("found", False):
            return None
        current = self.read(held["_source"]["memory_id"])
        if current is None or (current.memory.scope, current.memory.content_hash) != (scope, content_hash):
            return None
        return current

    def holders(self, keys: Sequence[tuple[str, str]]) -> list[Versioned]:
        """:meth:`holder` of many (scope, content hash) keys, in two ``_mget``: the claims, then
        the memories they name (without vectors); those still holding their key."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        client = self._cluster.client
        ids = [claim_id(scope, digest) for scope, digest in wanted]
        claims = self._cluster.call(
            "reading claims",
            lambda: client.mget(index=self._names.claims, body={"ids": ids}, _source_includes=["memory_id"]),
        )
        named = [str(doc["_source"]["memory_id"]) for doc in claims["docs"] if doc.get("found")]
        asked = set(wanted)
        return [v for v in self.read_many(named, vectors=False) if (v.memory.scope, v.memory.content_hash) in asked]

    # -- claims: one memory per (scope, content hash) --------------------------------------------

    def claim(self, memory: Memory) -> bool:
        """Make ``memory`` the holder of its (scope, content hash). Returns True if the claim is new.

        Raises ``DuplicateMemoryError`` when another live memory holds it.
        """
        cid = claim_id(memory.scope, memory.content_hash)
        claim = _claim_body(memory)
        client = self._cluster.client
        for attempt in range(_MAX_ATTEMPTS):
            try:
                self._cluster.call(
                    "claiming content",
                    lambda: client.index(index=self._names.claims, id=cid, body=claim, op_type="create"),
                )
                return True
            except Conflict:
                pass
            held = self._cluster.get_doc(self._names.claims, cid)
            if held is None or not held.get("found", False):
                continue  # released meanwhile: try to create it again
            holder_id = held["_source"]["memory_id"]
            if holder_id == memory.id:
                return False
            holder = self.read(holder_id)
            if holder is not None and (holder.memory.scope, holder.memory.content_hash) == (
                memory.scope,
                memory.content_hash,
            ):
                raise DuplicateMemoryError(
                    f"scope {memory.scope!r} already holds a memory with this content "
                    f"(hash {memory.content_hash[:12]}): {holder_id}"
                )
            age = (datetime.now(UTC) - from_iso(held["_source"]["claimed_at"])).total_seconds()
            if age < _CLAIM_LEASE_S:
                _backoff(attempt)
                continue
            try:
                self._cluster.call(
                    "taking over a stale claim",
                    partial(
                        client.index,
                        index=self._names.claims,
                        id=cid,
                        body=claim,
                        if_seq_no=held["_seq_no"],
                        if_primary_term=held["_primary_term"],
                    ),
                )
                return True
            except Conflict:
                pass
        raise StoreUnavailableError(f"could not claim content {memory.content_hash[:12]} in {memory.scope!r}")

    def create_claims(self, memories: Sequence[Memory]) -> list[Json]:
        """Create the claim of each memory's (scope, content hash) in one ``_bulk``; each item's
        result, in order (409: the claim exists, and is left to :meth:`claim` to sort out)."""
        lines: list[Json] = []
        for memory in memories:
            lines.append({"create": {"_index": self._names.claims, "_id": claim_id(memory.scope, memory.content_hash)}})
            lines.append(_claim_body(memory))
        return self._cluster.bulk(lines, refresh="false")

    def release(self, scope: str, content_hash: str, memory_id: str) -> None:
        """Drop the claim on (scope, content hash) if ``memory_id`` still holds it."""
        cid = claim_id(scope, content_hash)
        held = self._cluster.get_doc(self._names.claims, cid)
        if held is None or not held.get("found", False) or held["_source"]["memory_id"] != memory_id:
            return
        # A conditional delete: if another writer took the claim meanwhile, it stays theirs.
        self._cluster.bulk(
            [
                {
                    "delete": {
                        "_index": self._names.claims,
                        "_id": cid,
                        "if_seq_no": held["_seq_no"],
                        "if_primary_term": held["_primary_term"],
                    }
                }
            ],
            refresh="false",
        )

    # -- writes --------------------------------------------------------------------------------

    def write(
        self, memory: Memory, policy: DuplicatePolicy, *, expected: Versioned | None = None, read: bool = True
    ) -> bool:
        """Claim ``memory``'s content, then write it: create when new, else a conditional index.

        ``expected`` is the version ``decide`` saw (write_resolved): a newer one on the cluster
        raises ``_Conflict`` so the caller decides again. Otherwise a conflict re-reads and retries.
        """
        doc = memory_doc(memory, self._dimension)  # a bad vector fails here, before anything is written
        for attempt in range(_MAX_ATTEMPTS):
            current = expected if expected is not None else (self.read(memory.id) if read else None)
            if current is not None and policy is DuplicatePolicy.FAIL:
                raise DuplicateMemoryError(f"memory {memory.id} already exists")
            if current is not None and policy is DuplicatePolicy.SKIP:
                return False
            if current is None and policy is DuplicatePolicy.UPDATE:
                return False  # forgotten since it was read: the edit must not bring it back
            self.claim(memory)
            action: Json = {"_index": self._names.memories, "_id": memory.id}
            if current is None:
                line: Json = {"create": action}
            else:
                action["if_seq_no"] = current.seq_no
                action["if_primary_term"] = current.primary_term
                line = {"index": action}
            (item,) = self._cluster.bulk([line, doc], refresh="wait_for")
            if int(item.get("status", 200)) == 409:
                if expected is not None:
                    raise _Conflict
                read = True
                _backoff(attempt)
                continue
            if current is not None:
                old = current.memory
                if (old.scope, old.content_hash) != (memory.scope, memory.content_hash):
                    self.release(old.scope, old.content_hash, memory.id)
            return True
        raise StoreUnavailableError(f"memory {memory.id}: too many concurrent writers, giving up")

    def put_many(self, memories: Sequence[Memory], policy: DuplicatePolicy) -> int:
        """Claim the batch's new contents in one ``_bulk`` (a claim that exists is sorted out one by
        one, as :meth:`write` does), write the memories in a second without a refresh wait, refresh
        once, and release the claims of contents an overwrite replaced. An overwrite that keeps its
        memory's scope and content (an archiving, a consolidation) keeps its claim: nothing to claim."""
        if not memories:
            return 0
        docs = [memory_doc(m, self._dimension) for m in memories]  # a bad vector fails before any write
        ids = list(dict.fromkeys(m.id for m in memories))
        versions = {v.memory.id: v for v in self.read_many(ids, vectors=False)}
        existing = {memory_id: v.memory for memory_id, v in versions.items()}
        duplicates: list[str] = []
        to_claim: list[int] = []
        to_write: list[int] = []
        replaced: list[Memory] = []  # what an overwrite took the place of, under another content
        for i, memory in enumerate(memories):
            old = existing.get(memory.id)
            if old is None and policy is DuplicatePolicy.UPDATE:
                continue  # forgotten since it was read
            if old is None:
                to_claim.append(i)
            elif policy is DuplicatePolicy.FAIL:
                duplicates.append(memory.id)
            elif policy in (DuplicatePolicy.OVERWRITE, DuplicatePolicy.UPDATE):
                if (old.scope, old.content_hash) == (memory.scope, memory.content_hash):
                    to_write.append(i)
                else:
                    to_claim.append(i)
                    replaced.append(old)
        claimed = self.create_claims([memories[i] for i in to_claim]) if to_claim else []
        for i, item in zip(to_claim, claimed, strict=True):
            if int(item.get("status", 200)) >= 300:
                try:
                    self.claim(memories[i])  # its own already, stale, or another memory's
                except DuplicateMemoryError:
                    duplicates.append(memories[i].id)
                    continue
            to_write.append(i)
        lines: list[Json] = []
        for i in sorted(to_write):
            action: Json = {"_index": self._names.memories, "_id": memories[i].id}
            held = versions.get(memories[i].id)
            if held is not None and policy is DuplicatePolicy.UPDATE:
                # Conditional on the version read: a forget in between makes it a 409, not a re-creation.
                action |= {"if_seq_no": held.seq_no, "if_primary_term": held.primary_term}
            lines += [{"index" if held is not None else "create": action}, docs[i]]
        written = 0
        if lines:
            for item in self._cluster.bulk(lines, refresh="false"):
                status = int(item.get("status", 200))
                if status < 300:
                    written += 1
                elif status == 409 and policy is not DuplicatePolicy.UPDATE:
                    duplicates.append(str(item.get("_id")))
        client = self._cluster.client
        self._cluster.call("refreshing after a bulk import", lambda: client.indices.refresh(index=self._names.memories))
        for old in replaced:
            if old.id not in duplicates:
                self.release(old.scope, old.content_hash, old.id)
        if duplicates:
            raise not_written(duplicates)
        return written

    def write_resolved(self, incoming: Memory, decide: Callable[[Memory | None], Resolution]) -> Resolution:
        """The atomic resolve-and-write of :meth:`search.base.Store.write_resolved`."""
        # No lock, and nothing a crashed process can leave held. Uniqueness of (scope, hash) comes
        # from the claim document, created with op_type=create: of two racing writers exactly one
        # creates it, the other gets 409 and reinforces what the winner wrote. An update is a
        # conditional write on the _seq_no/_primary_term that `decide` saw; a 409 means another
        # writer got there first, so we read again and call `decide` again, and no update is lost.
        # A distributed lock would need leases, fencing and a cleanup path for dead holders.
        for attempt in range(_MAX_ATTEMPTS):
            current = self.holder(incoming.scope, incoming.content_hash)
            resolution = decide(None if current is None else current.memory)
            target = resolution.memory
            expected = current if current is not None and current.memory.id == target.id else None
            try:
                self.write(target, DuplicatePolicy.OVERWRITE, expected=expected, read=expected is None)
            except (_Conflict, DuplicateMemoryError) as exc:
                if isinstance(exc, DuplicateMemoryError) and current is not None:
                    raise
                _backoff(attempt)
                continue
            return resolution
        raise StoreUnavailableError(f"could not resolve {incoming.id}: too many concurrent writers")

    def write_resolved_many(
        self, incoming: Sequence[Memory], decide: Callable[[Memory, Memory | None], Resolution]
    ) -> list[Resolution]:
        """Many :meth:`write_resolved` in order, in two ``_bulk`` requests and one refresh when the
        contents are new.

        The claims of the whole batch are created in one ``_bulk`` (``create``: of two racing writers,
        one wins each). Every memory whose claim was created holds new content, so ``decide`` gets
        None and the memories go in a second ``_bulk``. What found its claim taken (content already
        stored, a copy earlier in the batch, a claim left by a crashed writer) is then resolved one
        by one, after the batch is written, so it sees the batch's writes.
        """
        if len(incoming) < 2:
            return [self.write_resolved(m, partial(decide, m)) for m in incoming]
        for memory in incoming:
            memory_doc(memory, self._dimension)  # a bad vector fails here, before anything is written
        claimed = self.create_claims(incoming)
        resolutions: list[Resolution | None] = [None] * len(incoming)
        lines: list[Json] = []
        placed: list[int] = []
        for i, (memory, item) in enumerate(zip(incoming, claimed, strict=True)):
            if int(item.get("status", 200)) >= 300:
                continue
            resolution = decide(memory, None)
            target = resolution.memory
            if (target.id, target.scope, target.content_hash) != (memory.id, memory.scope, memory.content_hash):
                self.release(memory.scope, memory.content_hash, memory.id)
                continue  # a decision that writes something else goes the careful way below
            lines += [
                {"create": {"_index": self._names.memories, "_id": target.id}},
                memory_doc(target, self._dimension),
            ]
            placed.append(i)
            resolutions[i] = resolution
        if lines:
            for i, item in zip(placed, self._cluster.bulk(lines, refresh="false"), strict=True):
                if int(item.get("status", 200)) >= 300:  # the id exists already: resolve it one by one
                    self.release(incoming[i].scope, incoming[i].content_hash, incoming[i].id)
                    resolutions[i] = None
            client = self._cluster.client
            self._cluster.call("refreshing after a batch", lambda: client.indices.refresh(index=self._names.memories))
        for i, memory in enumerate(incoming):
            if resolutions[i] is None:
                resolutions[i] = self.write_resolved(memory, partial(decide, memory))
        return [r for r in resolutions if r is not None]

    def delete(self, memory_id: str) -> Memory:
        """Delete the memory on the version read and release its claim; return what was deleted.

        Raises ``MemoryNotFoundError``. Its relations are the caller's to delete.
        """
        for attempt in range(_MAX_ATTEMPTS):
            current = self.read(memory_id)
            if current is None:
                raise MemoryNotFoundError(f"no memory with id {memory_id}")
            line = {
                "delete": {
                    "_index": self._names.memories,
                    "_id": memory_id,
                    "if_seq_no": current.seq_no,
                    "if_primary_term": current.primary_term,
                }
            }
            (item,) = self._cluster.bulk([line], refresh="wait_for")
            status = int(item.get("status", 200))
            if status == 409:
                _backoff(attempt)
                continue
            if status == 404:
                raise MemoryNotFoundError(f"no memory with id {memory_id}")
            old = current.memory
            self.release(old.scope, old.content_hash, memory_id)
            return old
        raise StoreUnavailableError(f"memory {memory_id}: too many concurrent writers, giving up")

    def record_access(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Bump the access counters, each on the version read; unknown ids are ignored."""
        pending = list(dict.fromkeys(memory_ids))
        for attempt in range(_MAX_ATTEMPTS):
            if not pending:
                return
            # The two counters only, as a partial update on the version read: neither the vectors
            # nor the rest of the document travel, and the stamp stays (an access changes no
            # content, so the second model's filler does not look at every memory recalled).
            current = self.read_many(pending, vectors=False)
            lines: list[Json] = []
            for versioned in current:
                action = {
                    "_index": self._names.memories,
                    "_id": versioned.memory.id,
                    "if_seq_no": versioned.seq_no,
                    "if_primary_term": versioned.primary_term,
                }
                counters = {"access_count": versioned.memory.access_count + 1, "last_accessed_at": to_iso(at)}
                lines += [{"update": action}, {"doc": counters}]
            if not lines:
                return
            # Counters are read by realtime GET, and recall never sorts on them: no refresh wait.
            items = self._cluster.bulk(lines, refresh="false")
            pending = [str(item["_id"]) for item in items if int(item.get("status", 200)) == 409]
            if pending:
                _backoff(attempt)
        raise StoreUnavailableError("record_access: too many concurrent writers, giving up")
