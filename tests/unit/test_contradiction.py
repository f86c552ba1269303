"""The contradiction check: a labelled set of pairs, and the cases its rules exist for."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from hivemem.contradiction import Relation, judge

PAIRS = Path(__file__).parent / "data" / "contradiction_pairs.jsonl"


def _pairs() -> list[dict[str, str]]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_labelled_set_is_judged_with_at_least_90_percent_accuracy(capsys: pytest.CaptureFixture[str]) -> None:
    pairs = _pairs()
    labels = Counter(p["label"] for p in pairs)
    assert len(pairs) >= 60 and set(labels) == {r.value for r in Relation} and min(labels.values()) >= 15
    confusion: Counter[tuple[str, str]] = Counter()
    for pair in pairs:
        confusion[(pair["label"], judge(pair["older"], pair["newer"]).relation.value)] += 1
    right = sum(n for (label, got), n in confusion.items() if label == got)
    accuracy = right / len(pairs)
    with capsys.disabled():  # the report: pytest tests/unit/test_contradiction.py -s
        print(f"\ncontradiction check: {right}/{len(pairs)} = {accuracy:.3f}")
        for label in Relation:
            row = {got.value: confusion[(label.value, got.value)] for got in Relation}
            print(f"  {label.value:>11}: {row}")
    assert accuracy >= 0.9


@pytest.mark.parametrize(
    ("older", "newer", "relation"),
    [
        # Negation has a scope: what is denied must be what the other says.
        ("Deploys run on Fridays.", "Never deploy on Fridays.", Relation.CONTRADICTS),
        ("Deploys run on Fridays.", "Deploys never run on weekends.", Relation.COMPATIBLE),
        ("We use X for builds.", "We don't use X for builds, but we use it for tests.", Relation.CONTRADICTS),
        # "no longer" and "no more" are one negator; "no more than" bounds a number.
        (
            "We deploy the API to Fly.io in the ams region.",
            "We now deploy the API to AWS ECS in eu-west-1, no longer Fly.io.",
            Relation.CONTRADICTS,
        ),
        (
            "We use Redis for the session cache.",
            "Sessions are cached in Memcached now, no more Redis.",
            Relation.CONTRADICTS,
        ),
        ("We allow 5 retries per job.", "Jobs get no more than 5 retries.", Relation.COMPATIBLE),
        # A clause that ends "X is gone" denies X, and only X.
        ("The team uses Jest for frontend tests.", "Frontend tests run on Vitest; Jest is gone.", Relation.CONTRADICTS),
        ("The nightly backup job runs at 02:00.", "The nightly backup job has been retired.", Relation.CONTRADICTS),
        ("The legacy export endpoint is /v1/export-old.", "/v1/export-old is now deprecated.", Relation.CONTRADICTS),
        (
            "The nightly backup job runs at 02:00.",
            "Backups run nightly and the weekly job is gone.",
            Relation.COMPATIBLE,
        ),
        ("The billing cron runs every hour.", "The billing cron is not gone.", Relation.COMPATIBLE),
        # Word forms: one stem.
        (
            "The user prefers spaces.",
            "The user preferred spaces, but now prefers tabs over spaces.",
            Relation.CONTRADICTS,
        ),
        # Transitions name an old side and a new one, in either order.
        ("Builds run with Maven.", "Builds moved from Maven to Gradle.", Relation.CONTRADICTS),
        ("Builds run with Gradle.", "Builds moved from Maven to Gradle.", Relation.COMPATIBLE),
        ("Uploads go to S3.", "Uploads go to GCS instead of S3.", Relation.CONTRADICTS),
        # Antonyms, and one value swapped.
        ("Signups are open.", "Signups are closed.", Relation.CONTRADICTS),
        ("The queue holds 500 jobs at most.", "The queue holds 2000 jobs at most.", Relation.CONTRADICTS),
        ("The queue holds 500 jobs at most.", "The queue is drained by four workers.", Relation.COMPATIBLE),
        ("The user likes tea.", "Invoices are sent monthly.", Relation.UNRELATED),
    ],
)
def test_the_rules_on_the_cases_they_exist_for(older: str, newer: str, relation: Relation) -> None:
    verdict = judge(older, newer)
    assert verdict.relation is relation, verdict.reason


def test_every_verdict_says_why() -> None:
    verdict = judge("Caching is enabled in staging.", "Caching is disabled in staging.")
    assert verdict.relation is Relation.CONTRADICTS and "enabl" in verdict.reason
