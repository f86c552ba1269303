"""Tokens on the server: hashed at rest, revoked from the next request, expiring, throttled."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli_main
from api.http.auth import ALL_ADDRESSES_FACTOR, Authenticator, server_key
from api.main import announce_first_admin, create_app
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.errors import AuthenticationError, StoreError, TooManyAttempts
from hivemem.token_schemas import TokenCreate
from tests.api.conftest import LOCAL_URL


def _settings(tmp_path: Path, **extra: object) -> Settings:
    return Settings(data_dir=tmp_path / "data", embed_model="hash:64", **extra)  # type: ignore[arg-type]


@pytest.fixture
def team(tmp_path: Path) -> Iterator[tuple[MemoryService, TestClient]]:
    service = MemoryService.from_settings(_settings(tmp_path, team=True, auth_failures_per_min=5))
    with TestClient(create_app(service.settings, service), base_url=LOCAL_URL) as client:
        yield service, client
    service.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_store_holds_no_token_only_its_keyed_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path)
    # The CLI reads its settings from the environment: run it on this data folder.
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    assert cli_main(["token", "create", "bob", "--grant", "github.com/acme/*:write", "--expires", "30"]) == 0
    printed, notes = capsys.readouterr()
    token = printed.strip().splitlines()[-1]
    # The first token turns auth on for the laptop's own server: the CLI says so, once.
    assert "note: this store had no token: from now on its server asks every HTTP client" in notes
    assert "no --grant" not in notes
    assert token.startswith("hm_") and len(token) == 3 + 12 + 1 + 43
    stored = b"".join(p.read_bytes() for p in settings.data_dir.glob("hivemem.db*"))
    assert token.encode() not in stored and token.split("_", 2)[2].encode() not in stored
    with sqlite3.connect(settings.data_dir / "hivemem.db") as db:
        (digest,) = db.execute("SELECT digest FROM tokens WHERE principal = 'bob'").fetchone()
    assert len(digest) == 64 and digest not in token
    assert cli_main(["token", "list"]) == 0
    assert token not in capsys.readouterr().out
    assert cli_main(["token", "create", "dave"]) == 0
    notes = capsys.readouterr().err
    assert notes == (
        f"store: sqlite:///{settings.data_dir}/hivemem.db\n"  # the store the token lives in, named
        "note: no --grant: this token may use only its own scope user/dave\n"
    )
    assert cli_main(["config"]) == 0
    assert json.loads(capsys.readouterr().out)["effective_store_url"] == f"sqlite:///{settings.data_dir}/hivemem.db"
    assert cli_main(["token", "create", "Bad Name"]) == 2
    assert cli_main(["token", "create", "carol", "--grant", "acme:owner"]) == 2
    # A glob that can match no scope (a trailing '/', meant as '/*') is refused, not a token granting nothing.
    assert cli_main(["token", "create", "carol", "--grant", "github.com/acme/:write"]) == 2
    assert "neither empty nor '..'" in capsys.readouterr().err
    assert cli_main(["token", "list"]) == 0
    assert "carol" not in capsys.readouterr().out


def test_a_revoked_token_is_refused_from_the_next_request(team: tuple[MemoryService, TestClient]) -> None:
    service, client = team
    admin = service.tokens.first_admin()
    assert admin is not None and service.tokens.first_admin() is None
    for nothing in ("github.com/acme/:write", "../etc:read"):
        refused = client.post("/v1/tokens", json={"name": "alice", "grants": [nothing]}, headers=bearer(admin.token))
        assert refused.status_code == 422 and "neither empty nor '..'" in refused.json()["message"], refused.text
    made = client.post("/v1/tokens", json={"name": "alice", "grants": ["(global):read"]}, headers=bearer(admin.token))
    assert made.status_code == 201
    alice = made.json()["token"]
    assert client.get("/v1/whoami", headers=bearer(alice)).json()["personal_scope"] == "user/alice"
    assert client.post("/v1/remember", json={"query": "x", "scope": ""}, headers=bearer(alice)).status_code == 200
    # Alice is no admin: she can neither list nor revoke tokens.
    assert client.get("/v1/tokens", headers=bearer(alice)).status_code == 403
    revoked = client.delete(f"/v1/tokens/{made.json()['id']}", headers=bearer(admin.token))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    after = client.post("/v1/remember", json={"query": "x", "scope": ""}, headers=bearer(alice))
    assert after.status_code == 401
    actions = [e.action for e in service.store.audit_log()]
    assert actions.count("token_create") == 2 and actions.count("token_revoke") == 1
    assert all(admin.token not in str(e.detail) and alice not in str(e.detail) for e in service.store.audit_log())


def test_bad_tokens_from_one_address_are_throttled(team: tuple[MemoryService, TestClient]) -> None:
    service, client = team
    admin = service.tokens.first_admin()
    assert admin is not None
    wrong = admin.token[:-4] + ("AAAA" if not admin.token.endswith("AAAA") else "BBBB")
    statuses = [client.get("/v1/status", headers=bearer(wrong)).status_code for _ in range(5)]
    assert statuses == [401] * 5
    # The limit is reached: every request of this address is refused, the right token included.
    locked = client.get("/v1/status", headers=bearer(admin.token))
    assert locked.status_code == 429 and 1 <= int(locked.headers["retry-after"]) <= 60
    assert client.get("/healthz").status_code == 200  # probes stay open


def test_a_token_past_its_rate_limit_gets_429(tmp_path: Path) -> None:
    service = MemoryService.from_settings(_settings(tmp_path, team=True, rate_limit_per_min=3))
    try:
        with TestClient(create_app(service.settings, service), base_url=LOCAL_URL) as client:
            admin = service.tokens.first_admin()
            assert admin is not None
            statuses = [client.get("/v1/whoami", headers=bearer(admin.token)).status_code for _ in range(4)]
            assert statuses == [200, 200, 200, 429]
    finally:
        service.close()


def test_expiry_is_honoured(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    service = MemoryService.from_settings(settings)
    try:
        issued = service.tokens.create(TokenCreate(name="dora", expires_in_days=1.0), Caller(principal="cli"))
        assert issued.expires_at is not None
        now = {"at": datetime.now(UTC)}
        auth = Authenticator(service.store, server_key(settings), settings, wall_clock=lambda: now["at"])
        assert auth.authenticate(f"Bearer {issued.token}", "10.0.0.1") is not None
        now["at"] = issued.expires_at + timedelta(seconds=1)
        with pytest.raises(AuthenticationError, match="not valid"):
            auth.authenticate(f"Bearer {issued.token}", "10.0.0.1")
    finally:
        service.close()


def test_tokens_turn_on_auth_even_on_loopback_unless_loopback_is_trusted(tmp_path: Path) -> None:
    settings = _settings(tmp_path, auth_failures_per_min=2)
    service = MemoryService.from_settings(settings)
    try:
        auth = Authenticator(service.store, server_key(settings), settings, clock=lambda: 100.0)
        assert auth.authenticate(None, "127.0.0.1") is None  # no token yet: the trusted local caller
        issued = service.tokens.create(TokenCreate(name="erin"), Caller(principal="cli"))
        fresh = Authenticator(service.store, server_key(settings), settings)
        with pytest.raises(AuthenticationError):
            fresh.authenticate(None, "127.0.0.1")
        access = fresh.authenticate(f"bearer {issued.token}", "127.0.0.1")
        assert access is not None and access.principal == "erin"
        trusting = Authenticator(
            service.store, server_key(settings), settings.model_copy(update={"trust_loopback": True})
        )
        assert trusting.authenticate(None, "127.0.0.1") is None
        with pytest.raises(AuthenticationError):
            trusting.authenticate(None, "192.168.1.5")
        for _ in range(2):
            with pytest.raises(AuthenticationError):
                auth.authenticate("Bearer hm_000000000000_" + "x" * 43, "10.1.1.1")
        with pytest.raises(TooManyAttempts):
            auth.authenticate(f"Bearer {issued.token}", "10.1.1.1")
        assert auth.authenticate(f"Bearer {issued.token}", "10.1.1.2") is not None  # another address
    finally:
        service.close()


def test_a_team_server_prints_its_first_admin_token_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = MemoryService.from_settings(_settings(tmp_path, team=True))
    try:
        announce_first_admin(service)
        first = capsys.readouterr().out
        assert "hm_" in first and "*:admin" in first
        announce_first_admin(service)
        assert capsys.readouterr().out == ""
    finally:
        service.close()


def test_a_public_bind_needs_team_mode_or_the_override() -> None:
    with pytest.raises(ValueError, match="HIVEMEM_TEAM"):
        Settings(host="0.0.0.0", allowed_hosts=("memory.example.com",))
    assert Settings(host="0.0.0.0", allowed_hosts=("memory.example.com",), team=True).team


def test_a_store_outage_keeps_the_last_answer_on_whether_tokens_exist(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    service = MemoryService.from_settings(settings)
    now = {"t": 0.0}
    auth = Authenticator(service.store, server_key(settings), settings, clock=lambda: now["t"])
    assert auth.authenticate(None, "10.0.0.1") is None  # no token: the trusted local caller
    service.close()  # the store is gone
    now["t"] = 60.0
    assert auth.authenticate(None, "10.0.0.1") is None  # still the last answer, not an error
    with pytest.raises(StoreError):  # a token's record cannot be read: 503, neither in nor out
        auth.authenticate("Bearer hm_0123456789ab_" + "x" * 43, "10.0.0.1")


def test_a_store_slow_to_answer_holds_only_the_request_that_asked_it(tmp_path: Path) -> None:
    """The once-a-second "do tokens exist" read runs outside the lock: while it waits on a store
    that does not answer (a node timing out), every other request is let in on the last answer."""
    settings = _settings(tmp_path)
    service = MemoryService.from_settings(settings)
    asked, answer = threading.Event(), threading.Event()

    class Hanging:  # the real store, whose token listing hangs until the test lets it answer
        def __getattr__(self, name: str) -> object:
            return getattr(service.store, name)

        def tokens(self) -> list[object]:
            asked.set()
            answer.wait()
            return list(service.store.tokens())

    now = {"t": 5.0}
    auth = Authenticator(Hanging(), server_key(settings), settings, clock=lambda: now["t"])  # type: ignore[arg-type]
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(auth.authenticate, None, "10.0.0.1")
            assert asked.wait(timeout=60)
            assert auth.authenticate(None, "10.0.0.2") is None  # not queued behind the read
            answer.set()
            assert first.result() is None
    finally:
        answer.set()
        service.close()


def test_bad_tokens_from_many_addresses_have_a_global_bound_and_bounded_audit(tmp_path: Path) -> None:
    settings = _settings(tmp_path, team=True, auth_failures_per_min=2)
    service = MemoryService.from_settings(settings)
    try:
        auth = Authenticator(service.store, server_key(settings), settings, clock=lambda: 100.0)
        issued = service.tokens.create(TokenCreate(name="erin"), Caller(principal="cli"))
        bound = 2 * ALL_ADDRESSES_FACTOR
        refusals: list[str] = []
        for i in range(bound + 15):  # each address stays under its own limit of 2
            with pytest.raises(AuthenticationError) as refused:
                auth.authenticate("Bearer hm_000000000000_" + "x" * 43, f"10.2.{i // 200}.{i % 200}")
            refusals.append(type(refused.value).__name__)
        assert refusals.count("AuthenticationError") == bound
        assert refusals[bound:] == ["TooManyAttempts"] * 15
        denied = [e for e in service.store.audit_log() if e.action == "denied"]
        assert len(denied) == bound  # audited up to the bound, not one row a request
        # A valid token still passes, from an address that sent no bad one.
        assert auth.authenticate(f"Bearer {issued.token}", "10.9.9.9") is not None
    finally:
        service.close()
