"""Two runs of one question set, question by question: the sign test, variants' gains and losses,
and `hivemem bench compare` on two reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.cli import main
from bench.suite.paired import compare, compare_reports, sign_test_p
from tests.bench.test_smallstore import small_set


def test_the_sign_test_is_exact_and_two_sided() -> None:
    assert sign_test_p(5, 2) == pytest.approx(2 * (1 + 7 + 21) / 2**7)
    assert sign_test_p(2, 5) == sign_test_p(5, 2)
    assert sign_test_p(10, 0) == pytest.approx(2 / 2**10)
    assert sign_test_p(3, 3) == 1.0 and sign_test_p(0, 0) == 1.0
    # Sets of thousands of questions (SciFact's corpus, LoCoMo's ten conversations) differ on more
    # questions than a float can hold 2**n for.
    assert sign_test_p(600, 500) == pytest.approx(0.00282, rel=0.05)
    assert sign_test_p(3000, 3000) == 1.0


def test_questions_are_paired_by_id_not_by_order() -> None:
    base = {"a": {"hit@1": 1.0}, "b": {"hit@1": 0.0}, "c": {"hit@1": 0.0}, "only-base": {"hit@1": 1.0}}
    other = {"c": {"hit@1": 1.0}, "b": {"hit@1": 1.0}, "a": {"hit@1": 0.0}, "only-other": {"hit@1": 0.0}}
    difference = compare(base, other, "hit@1")
    assert (difference.questions, difference.better, difference.worse) == (3, 2, 1)
    assert (difference.base, difference.other) == (round(1 / 3, 4), round(2 / 3, 4))
    assert difference.p_value == 1.0
    assert difference.line() == "hit@1 0.333 -> 0.667: +2 / -1 of 3 (p 1)"


def test_runs_of_different_sets_or_without_questions_are_refused() -> None:
    with pytest.raises(ValueError, match="share no question"):
        compare({"a": {"mrr": 1.0}}, {"b": {"mrr": 1.0}}, "mrr")
    with pytest.raises(ValueError, match="without per_question"):
        compare_reports({"hit@1": 0.5}, {"hit@1": 0.5, "per_question": {}})


def test_each_variant_is_paired_with_the_first_on_its_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = small_set(tmp_path, monkeypatch), tmp_path / "report.json"
    args = ["bench", "smallstore", "--data", str(data), "--json", str(out)]
    assert main([*args, "--variant", "base", "--variant", "keywords:bm25_weight=1.0"]) == 0
    report = json.loads(out.read_text())
    first, second = report["variants"]
    assert set(report["per_question"]) == set(first["per_question"])
    assert len(first["per_question"]) == report["questions"] == 4
    assert "against_first" not in first
    paired = {row["metric"]: row for row in second["against_first"]}
    assert set(paired) == {"hit@1", "hit@3", "hit@5", "mrr"}
    for metric, row in paired.items():
        assert (row["base"], row["other"], row["questions"]) == (first[metric], second[metric], 4)
        ups = sum(second["per_question"][q][metric] > s[metric] for q, s in first["per_question"].items())
        assert row["better"] == ups and 0.0 <= row["p_value"] <= 1.0
    hit = paired["hit@1"]
    assert f"| +{hit['better']} / -{hit['worse']} ({hit['p_value']:.2g}) |" in capsys.readouterr().err


def test_bench_compare_pairs_two_reports_and_refuses_what_it_cannot_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = small_set(tmp_path, monkeypatch)
    reports = {}
    for model in ("hash:64", "hash:16"):
        monkeypatch.setenv("HIVEMEM_EMBED_MODEL", model)
        reports[model] = tmp_path / f"{model.replace(':', '-')}.json"
        assert main(["bench", "smallstore", "--data", str(data), "--json", str(reports[model])]) == 0
    capsys.readouterr()
    out = tmp_path / "compare.json"
    assert (
        main(
            [
                "bench",
                "compare",
                str(reports["hash:64"]),
                str(reports["hash:16"]),
                "--metric",
                "mrr",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    [row] = json.loads(out.read_text())["differences"]
    base, other = (json.loads(reports[m].read_text()) for m in ("hash:64", "hash:16"))
    assert (row["metric"], row["base"], row["other"]) == ("mrr", base["mrr"], other["mrr"])
    assert f"mrr {base['mrr']:.3f} -> {other['mrr']:.3f}" in capsys.readouterr().err

    bare = tmp_path / "old.json"
    bare.write_text(json.dumps({"hit@1": 0.5}))
    assert main(["bench", "compare", str(reports["hash:64"]), str(bare)]) == 2
    assert "without per_question" in capsys.readouterr().err
    assert main(["bench", "compare", str(reports["hash:64"]), str(tmp_path / "absent.json")]) == 2
    assert "not a readable report" in capsys.readouterr().err
