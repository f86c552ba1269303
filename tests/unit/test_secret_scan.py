"""The secret detector on its set of real-shaped secrets and look-alikes (bench/secrets/cases.jsonl),
and what a finding and a redaction look like."""

from __future__ import annotations

from pathlib import Path

from bench.suite.secrets import score_cases
from hivemem.secret_scan import find_secrets, redact

CASES = Path(__file__).resolve().parents[2] / "bench" / "secrets" / "cases.jsonl"


def test_the_set_is_caught_without_a_false_alarm() -> None:
    report = score_cases(CASES)
    assert report["secrets"] >= 30 and report["look_alikes"] >= 20 and report["cases"] >= 40
    assert report["false_alarms"] == []  # no look-alike refused: UUIDs, SHAs, digests, images, placeholders
    assert report["recall"] >= 0.95, report["missed"]


def test_a_finding_names_the_kind_and_span_and_redaction_keeps_the_rest() -> None:
    text = "key id AKIA" + "Q3EGTRV5FZ7XK2MP" + " and the db at postgres://app:" + "S3cretPassw0rd" + "@db:5432/x"
    found = find_secrets(text)
    assert [f.kind for f in found] == ["aws_access_key", "basic_auth_credentials"]
    assert redact(text, found) == (
        "key id [REDACTED:aws_access_key] and the db at postgres://app:[REDACTED:basic_auth_credentials]@db:5432/x"
    )


def test_a_private_key_block_is_redacted_whole_even_cut_in_two() -> None:
    body = "\n".join("MIIEowIBAAKCAQEA1c7" + "x" * 45 for _ in range(3))
    block = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    whole = f"before\n{block}\nafter"
    assert redact(whole, find_secrets(whole)) == "before\n[REDACTED:private_key]\nafter"
    head, tail = whole[: len(whole) // 2], whole[len(whole) // 2 :]  # a chunk boundary in the middle
    assert redact(head, find_secrets(head)) == "before\n[REDACTED:private_key]"
    assert redact(tail, find_secrets(tail)) == "[REDACTED:private_key]\nafter"
