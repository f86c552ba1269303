"""The tokens aggregate of the Store contract (search/base.py), on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hivemem.access import GLOBAL_PATTERN, Grant, Role
from hivemem.errors import DuplicateMemoryError, TokenNotFoundError
from hivemem.tokens import issue_token
from search import Store

KEY = b"k" * 32
NOW = datetime(2026, 12, 2, 8, 0, 0, 123456, tzinfo=UTC)


def test_a_token_record_round_trips_without_its_token(store: Store) -> None:
    grants = (Grant("github.com/acme/*", Role.WRITE), Grant(GLOBAL_PATTERN, Role.READ))
    issued = issue_token("alice", grants, key=KEY, now=NOW, expires_at=NOW + timedelta(days=30), created_by="root")
    store.put_token(issued.record)
    read = store.get_token(issued.record.id)
    assert read == issued.record
    assert read is not None and read.matches(issued.token, KEY) and not read.matches(issued.token + "x", KEY)
    assert issued.token not in repr(store.tokens())
    assert store.get_token("0" * 12) is None


def test_tokens_are_listed_oldest_first_and_ids_are_unique(store: Store) -> None:
    first = issue_token("alice", (), key=KEY, now=NOW)
    second = issue_token("bob", (Grant("*", Role.ADMIN),), key=KEY, now=NOW + timedelta(seconds=1))
    store.put_token(second.record)
    store.put_token(first.record)
    assert [r.principal for r in store.tokens()] == ["alice", "bob"]
    with pytest.raises(DuplicateMemoryError):
        store.put_token(first.record)


def test_revoking_keeps_the_first_revocation_time(store: Store) -> None:
    issued = issue_token("carol", (), key=KEY, now=NOW)
    store.put_token(issued.record)
    revoked = store.revoke_token(issued.record.id, NOW + timedelta(hours=1))
    assert revoked.revoked_at == NOW + timedelta(hours=1)
    again = store.revoke_token(issued.record.id, NOW + timedelta(hours=2))
    assert again.revoked_at == NOW + timedelta(hours=1)
    stored = store.get_token(issued.record.id)
    assert stored is not None and not stored.live(NOW + timedelta(hours=3))
    with pytest.raises(TokenNotFoundError):
        store.revoke_token("f" * 12, NOW)
