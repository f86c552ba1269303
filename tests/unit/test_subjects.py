"""Subjects and values: what resolution may fold or replace, on entries of others' reference text.

The texts are the PostgreSQL 15 manual's, redis.conf's, /etc/services' and the OpenSearch API
specification's (quoted as they are), and the lines of the report that found the fault.
"""

from __future__ import annotations

import pytest

from hivemem.contradiction import Relation, judge, restates
from hivemem.hashing import content_hash
from hivemem.model import Memory, WriteOutcome, utcnow
from hivemem.resolution import Neighbour, ResolutionPolicy, resolve
from hivemem.subjects import subjects_apart

POLICY = ResolutionPolicy(neighbours=5, reinforce_at=0.85, contradiction_at=0.60)

TRACE_USERLOCKS = (
    "trace_userlocks (boolean)",
    "If on, emit information about user lock usage. Output is the same as for trace_locks, only for advisory locks.",
)
TRACE_LOCK_TABLE = ("trace_lock_table (integer)", "If set, unconditionally trace locks on this table (OID).")
SCALE_FACTOR = (
    "autovacuum_vacuum_insert_scale_factor (floating point)",
    "Specifies a fraction of the table size to add to autovacuum_vacuum_insert_threshold when deciding "
    "whether to trigger a VACUUM. The default is 0.2 (20% of table size).",
)
INSERT_THRESHOLD = (
    "autovacuum_vacuum_insert_threshold (integer)",
    "Specifies the number of inserted tuples needed to trigger a VACUUM in any one table. The default is 1000 tuples.",
)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        (TRACE_USERLOCKS, TRACE_LOCK_TABLE),
        # It mentions the other's name, and is still about its own.
        (INSERT_THRESHOLD, SCALE_FACTOR),
        # One title for all: the name opens each text.
        (
            ("PostgreSQL setting", "ssl (boolean): Enables SSL connections. The default is off."),
            (
                "PostgreSQL setting",
                "ssl_cert_file (string): Specifies the name of the file containing the SSL server certificate.",
            ),
        ),
        (
            ("ssl (boolean)", "Enables SSL connections. The default is off."),
            ("ssl_cert_file (string)", "Specifies the name of the file containing the SSL server certificate."),
        ),
        (
            (
                "redis.conf maxmemory",
                "Set a memory usage limit to the specified amount of bytes. Example: maxmemory <bytes>",
            ),
            (
                "redis.conf maxmemory-policy",
                "MAXMEMORY POLICY: how Redis will select what to remove when maxmemory is reached.",
            ),
        ),
        (
            (
                "count parameter analyzer",
                "The analyzer query parameter of count: Analyzer to use for the query string.",
            ),
            ("count parameter q", "The q query parameter of count: Query in the Lucene query string syntax."),
        ),
        (
            ("Round 3 item 7", "Round 3 item 7: service 7 restarts with the drain-first procedure."),
            ("Round 3 item 4", "Round 3 item 4: service 4 restarts with the drain-first procedure."),
        ),
        (
            ("Runbook", "Round 3 item 7: service 7 restarts with the drain-first procedure."),
            ("Runbook", "Round 4 item 7: service 7 restarts with the drain-first procedure."),
        ),
    ],
)
def test_entries_of_one_reference_are_different_subjects(older: tuple[str, str], newer: tuple[str, str]) -> None:
    assert subjects_apart(older, newer)
    assert subjects_apart(newer, older)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        (("Database", "Database is Postgres 14"), ("Database upgrade", "We moved from Postgres 14 to 16")),
        (
            ("Use MySQL", "We use MySQL for the main database."),
            ("Use PostgreSQL", "We use PostgreSQL for the main database."),
        ),
        (
            ("API page size", "The default page size of the API is 50."),
            ("Default page size", "The API's default page size is 100."),
        ),
        (
            ("Nightly backup time", "The nightly backup job runs at 02:00 UTC."),
            ("Nightly backup moved", "The nightly backup job runs at 04:00 UTC."),
        ),
        (
            ("Language for new services", "The user prefers TypeScript for new services."),
            ("Go for new services", "We decided to drop TypeScript for Go in new services."),
        ),
        # A later record names the one it takes back.
        (
            ("ADR 12: queue", "ADR 12: jobs go through RabbitMQ."),
            ("ADR 15: queue", "ADR 15 supersedes ADR 12: jobs go through Redis streams."),
        ),
        (
            (
                "log_duration (boolean)",
                "Causes the duration of every completed statement to be logged. The default is off.",
            ),
        )
        * 2,
        # A note's opening word is no entry's name, and titles cut from their texts are no template.
        (
            ("note: the billing client times out after", "note: the billing client times out after thirty seconds."),
            ("the billing client times out after thirt", "the billing client times out after thirty seconds as agreed"),
        ),
        (
            ("note: the nightly backup job runs at two", "note: the nightly backup job runs at two in the morning utc"),
            ("reminder: the nightly backup job runs at", "reminder: the nightly backup job runs at two in the morning"),
        ),
    ],
)
def test_updates_of_one_subject_are_not_kept_apart(older: tuple[str, str], newer: tuple[str, str]) -> None:
    assert subjects_apart(older, newer) is None


def test_a_setting_changed_in_place_contradicts_and_a_protocol_variant_does_not() -> None:
    manual = (
        "Specifies the minimum number of updated or deleted tuples needed to trigger a VACUUM in any one table. "
        "The default is 50 tuples."
    )
    assert judge(manual, manual.replace("50 tuples", "100 tuples")).relation is Relation.CONTRADICTS
    switch = "Causes the duration of every completed statement to be logged. The default is off."
    assert judge(switch, switch.replace("is off", "is on")).relation is Relation.CONTRADICTS
    # /etc/services lists most services twice, once a protocol: both hold.
    assert judge("echo uses port 7/tcp.", "echo uses port 7/udp.").relation is not Relation.CONTRADICTS


def test_only_the_same_statement_said_again_restates() -> None:
    assert restates("Logs are shipped to Loki.", "Our logs go to Loki.")
    assert not restates(
        "Every pull request needs one approval from the owning team before merge.",
        "Every pull request runs the full test suite in CI before merge.",
    )


def _memory(memory_id: str, title: str, content: str) -> Memory:
    return Memory(
        id=memory_id, scope="s", title=title, content=content, content_hash=content_hash(content), embedding=[1.0, 0.0]
    )


@pytest.mark.parametrize(
    "wording",
    [
        "We moved from Postgres 14 to 16",
        "switched from PostgreSQL 14 to PostgreSQL 16",
        "We upgraded the database from Postgres 14 to Postgres 16 last week.",
    ],
)
def test_a_named_change_supersedes_below_the_band(wording: str) -> None:
    # 0.61 is MiniLM's cosine for the first wording: under the band, linked `similar` only, before.
    old = _memory("old", "Database", "Database is Postgres 14")
    resolution = resolve(_memory("new", wording[:40], wording), None, utcnow(), [Neighbour(old, 0.55)], POLICY)
    assert (resolution.outcome, resolution.target_id) == (WriteOutcome.SUPERSEDED, "old")


def test_two_entries_are_stored_apart_however_close_their_vectors() -> None:
    old = _memory("old", *TRACE_USERLOCKS)
    resolution = resolve(_memory("new", *TRACE_LOCK_TABLE), None, utcnow(), [Neighbour(old, 0.97)], POLICY)
    assert resolution.outcome is WriteOutcome.STORED and resolution.memory.id == "new"
    assert [r.target_id for r in resolution.relations] == ["old"]  # linked `similar`, found together


def test_a_reason_names_the_words_the_memories_wrote_not_their_stems() -> None:
    from hivemem.reason_words import in_their_words

    texts = ("Database", "Database is Postgres 14", "Postgres version", "We run Postgres 16 since the upgrade.")
    assert in_their_words("different subjects: databas / postgr", *texts) == "different subjects: Database / Postgres"
    assert in_their_words("same subject (deploy, stage), no conflict", "Deploys go through staging") == (
        "same subject (Deploys, staging), no conflict"
    )
    # Through resolve: the stems were "monday" / "tuesday".
    old = _memory("old", "On-call rota", "Alice is on call on Mondays.")
    new = _memory("new", "On-call rota", "Bob is on call on Tuesdays.")
    resolution = resolve(new, None, utcnow(), [Neighbour(old, 0.9)], POLICY)
    assert resolution.reason == "different values: Mondays / Tuesdays"
