"""Verified and stale, on both stores: recall labels a fact, progress note or failure not verified for
longer than its type holds, leaves it out when asked, `verify` clears the label, a repeat verifies
it too, and memory_status lists what is stale. Decisions do not go stale this way."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from api.services.caller import Caller
from hivemem.config import Settings
from hivemem.model import DuplicatePolicy, MemoryType, utcnow
from hivemem.schemas import MemoryCreate, RecallRequest
from hivemem.staleness import StalenessTuning
from tests.search.conftest import OpenService

SCOPE = "github.com/acme/api"
CALLER = Caller(default_scope=SCOPE)


def test_stale_labels_the_option_to_leave_them_out_and_verify(settings: Settings, open_service: OpenService) -> None:
    service = open_service(settings)
    try:
        old = utcnow() - timedelta(days=StalenessTuning().stale_fact_days + 30)
        written = {
            "fact": service.memorize(
                MemoryCreate(title="Primary database host", content="The primary database runs on db-3.internal."),
                CALLER,
            ),
            "decision": service.memorize(
                MemoryCreate(
                    title="Database choice",
                    content="We chose PostgreSQL for the database.",
                    memory_type=MemoryType.DECISION,
                ),
                CALLER,
            ),
        }
        for memory_id in (w.id for w in written.values()):  # both written four months ago, never verified since
            memory = service.store.get(memory_id)
            service.store.put(replace(memory, created_at=old, updated_at=old), DuplicatePolicy.OVERWRITE)

        def recalled(**options: object) -> dict[str, str]:
            answer = service.remember(RecallRequest(query="which host runs the database", **options), CALLER)
            return {r.title: r.label for r in answer.results}

        labels = recalled()
        assert labels["Primary database host"] == "[INFERRED] [STALE? last verified 120 days ago]"
        assert labels["Database choice"] == "[INFERRED]"  # a decision holds until superseded
        assert set(recalled(exclude_stale=True)) == {"Database choice"}
        (listed,) = service.status(CALLER).stale
        assert (listed.id, listed.days) == (written["fact"].id, 120)

        verified = service.operators.verify(written["fact"].id, CALLER)
        assert utcnow() - verified.verified_at < timedelta(minutes=1)
        assert recalled()["Primary database host"] == "[INFERRED]"
        assert service.status(CALLER).stale == []
        assert "verify" in [event.action for event in service.store.audit_log(written["fact"].id)]

        # Said again, identically, four months on: reinforced, and so verified.
        memory = service.store.get(written["fact"].id)
        service.store.put(replace(memory, verified_at=old), DuplicatePolicy.OVERWRITE)
        assert "STALE?" in recalled()["Primary database host"]
        again = MemoryCreate(title="Primary database host", content="The primary database runs on db-3.internal.")
        assert service.memorize(again, CALLER).outcome == "reinforced"
        assert recalled()["Primary database host"] == "[INFERRED]"
    finally:
        service.close()
