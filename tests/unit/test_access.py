"""Grants, roles and the personal scope (hivemem.access), tokens' format (hivemem.tokens), the throttle."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from api.services.caller import Caller
from hivemem.access import GRANT_PATTERN, LOCAL, MAX_GRANT_LENGTH, Access, Grant, Role
from hivemem.errors import PermissionDeniedError, ValidationError
from hivemem.throttle import Throttle
from hivemem.tokens import issue_token, token_digest, token_id_of

ALICE = Access("alice", (Grant.parse("github.com/acme/*:write"), Grant.parse("(global):read")))


def test_a_grant_is_a_glob_and_a_role() -> None:
    grant = Grant.parse("github.com/acme/*:write")
    assert (grant.pattern, grant.role) == ("github.com/acme/*", Role.WRITE)
    assert grant.covers("github.com/acme/api") and grant.covers("github.com/acme/api/sub")
    assert not grant.covers("github.com/acme") and not grant.covers("github.com/beta/api")
    assert not grant.covers("")  # the global scope is named, never matched by a narrower glob
    assert Grant.parse("(global):read").covers("") and Grant.parse("*:admin").covers("")
    assert Grant.parse("host:8080/repo:read").pattern == "host:8080/repo"  # the last ':' splits
    for bad in ("github.com/acme", "acme:owner", ":read", "a b:read"):
        with pytest.raises(ValidationError):
            Grant.parse(bad)


GLOBS_THAT_MATCH_NO_SCOPE = ("github.com/acme/:write", "../x:read", "a/..:read", "..:admin", "/x:read", "a//b:read")


@pytest.mark.parametrize("text", GLOBS_THAT_MATCH_NO_SCOPE)
def test_a_glob_with_an_empty_or_dot_dot_segment_is_refused(text: str) -> None:
    # No scope has such a segment (hivemem.scope), so the token would quietly get nothing there.
    with pytest.raises(ValidationError, match=re.escape("neither empty nor '..'")):
        Grant.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        *GLOBS_THAT_MATCH_NO_SCOPE,
        "github.com/acme/*:write",
        "(global):read",
        "(global)/x:read",
        "*:admin",
        "host:8080/repo:read",
        "a/...:read",
        "a/..:b:read",  # the pattern is a/..:b, whose last segment is not '..'
        "x/.y:write",
        "a" * 525 + ":read",
        "a" * 526 + ":read",
        "a/..:read\n",
    ],
)
def test_the_schema_pattern_admits_exactly_what_parse_accepts(text: str) -> None:
    # The OpenAPI and MCP schemas publish GRANT_PATTERN: a schema-valid grant must be a valid one.
    try:
        Grant.parse(text)
        parsed = True
    except ValidationError:
        parsed = False
    assert (re.search(GRANT_PATTERN, text) is not None and len(text) <= MAX_GRANT_LENGTH) is parsed


def test_roles_include_the_weaker_ones_and_the_personal_scope_is_owned() -> None:
    assert ALICE.may("github.com/acme/api", Role.WRITE) and ALICE.may("github.com/acme/api", Role.READ)
    assert not ALICE.may("github.com/acme/api", Role.ADMIN)
    assert ALICE.may("", Role.READ) and not ALICE.may("", Role.WRITE)
    assert ALICE.may("user/alice", Role.ADMIN) and not ALICE.may("user/bob", Role.READ)
    assert ALICE.home == "user/alice" and not ALICE.manages_tokens
    assert LOCAL.may("anything/at/all", Role.ADMIN) and LOCAL.manages_tokens and LOCAL.home is None


def test_the_caller_applies_grants_where_it_picks_scopes() -> None:
    caller = Caller.of(ALICE)
    assert caller.default_scope == "user/alice"
    assert caller.readable(None) == ["user/alice", ""]
    assert caller.scope_for("github.com/acme/api", write=True) == "github.com/acme/api"
    with pytest.raises(PermissionDeniedError):
        caller.scope_for("github.com/beta/web", write=False)
    with pytest.raises(PermissionDeniedError):
        caller.scope_for("", write=True)
    no_global = Caller.of(Access("carol", (Grant.parse("github.com/beta/*:write"),)))
    assert no_global.readable("github.com/beta/web") == ["github.com/beta/web"]  # global left out
    assert Caller().readable("x/y") == ["x/y", ""]  # the trusted local caller, as before tokens


def test_tokens_are_recognisable_and_only_their_hash_matches() -> None:
    now = datetime(2026, 12, 2, tzinfo=UTC)
    issued = issue_token("alice", (), key=b"k" * 32, now=now, expires_at=now + timedelta(days=1))
    assert token_id_of(issued.token) == issued.record.id
    assert token_id_of("hm_nothex") is None and token_id_of(issued.token + "x") is None
    assert issued.record.digest == token_digest(issued.token, b"k" * 32) != token_digest(issued.token, b"j" * 32)
    assert issued.record.matches(issued.token, b"k" * 32) and not issued.record.matches(issued.token, b"j" * 32)
    assert issued.record.live(now) and not issued.record.live(now + timedelta(days=1))
    assert not issued.record.revoked(now).live(now)


def test_the_throttle_counts_a_sliding_minute() -> None:
    throttle = Throttle(limit=2, window_s=60)
    assert throttle.take("a", 0.0) == 0 and throttle.take("a", 10.0) == 0
    assert throttle.take("a", 20.0) == 40  # the first event leaves the window at 60
    assert throttle.take("b", 20.0) == 0  # keys are apart
    assert throttle.take("a", 60.5) == 0
    throttle.record("c", 0.0)
    assert throttle.blocked_for("c", 1.0) == 0
    throttle.record("c", 1.0)
    assert throttle.blocked_for("c", 2.0) == 58
