from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from api.settings_catalogue import TUNING_GROUPS
from hivemem.config import Settings, redact_url
from hivemem.errors import ConfigError
from hivemem.model import FusionMethod
from search.opensearch.tuning import OpenSearchTuning
from search.recall_params import RecallParams
from search.sqlite.tuning import SQLiteTuning
from workers.lifecycle_tuning import LifecycleTuning


def test_defaults_point_at_the_embedded_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    settings = Settings()
    assert settings.data_dir == tmp_path / "hivemem"
    assert settings.resolved_store_url() == f"sqlite:///{tmp_path / 'hivemem' / 'hivemem.db'}"
    assert settings.broker_url == ""
    assert RecallParams().fusion is FusionMethod.MINMAX
    assert RecallParams().bm25_weight == 0.5


def test_environment_overrides_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "hivemem.toml"
    config.write_text('port = 9000\n\n[tuning]\nfusion = "rrf"\nrrf_k = 30\n')
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    monkeypatch.setenv("HIVEMEM_PORT", "9100")
    monkeypatch.setenv("HIVEMEM_RRF_K", "40")
    assert Settings().port == 9100
    recall = RecallParams()
    assert recall.fusion is FusionMethod.RRF
    assert recall.rrf_k == 40
    # Explicit arguments win over both.
    assert RecallParams(rrf_k=7).rrf_k == 7


def test_tuning_parameters_keep_their_variable_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tuning parameter is read from the HIVEMEM_* variable it had as a setting."""
    for group in TUNING_GROUPS:
        for name in group.model_fields:
            assert name not in Settings.model_fields, name
    monkeypatch.setenv("HIVEMEM_RESOLUTION_NEIGHBOURS", "0")
    monkeypatch.setenv("HIVEMEM_VECTOR_PROBE_ROWS", "123")
    monkeypatch.setenv("HIVEMEM_OPENSEARCH_REPLICAS", "0")
    assert LifecycleTuning().resolution_neighbours == 0
    assert SQLiteTuning().vector_probe_rows == 123
    assert OpenSearchTuning().opensearch_replicas == 0


def test_operator_settings_are_a_short_list() -> None:
    assert len(Settings.model_fields) <= 40


def test_bad_values_are_refused_with_the_field_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_BM25_WEIGHT", "1.5")
    with pytest.raises(pydantic.ValidationError, match="bm25_weight"):
        RecallParams()
    monkeypatch.setenv("HIVEMEM_PORT", "0")
    with pytest.raises(pydantic.ValidationError, match="port"):
        Settings()


def test_unknown_keys_in_toml_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "hivemem.toml"
    config.write_text("no_such_setting = 1\n")
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    with pytest.raises(ConfigError, match="no_such_setting is not an operator setting"):
        Settings()


def test_a_tuning_parameter_at_the_top_of_the_file_is_sent_to_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "hivemem.toml"
    config.write_text("bm25_weight = 0.4\n")
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    with pytest.raises(ConfigError, match=r"bm25_weight .*\[tuning\] table"):
        Settings()
    config.write_text("[tuning]\nbm25_weight = 0.4\n")
    assert RecallParams().bm25_weight == 0.4


def test_a_config_file_that_is_not_toml_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "hivemem.toml"
    config.write_text("port = = 1\n")
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    with pytest.raises(ConfigError, match="not TOML"):
        Settings()


def test_a_config_file_named_but_not_there_is_refused_and_the_default_one_may_be_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mistyped HIVEMEM_CONFIG, or a volume not mounted, would otherwise run on the defaults.
    monkeypatch.setenv("HIVEMEM_CONFIG", str(tmp_path / "hivemem.tmol"))
    with pytest.raises(ConfigError, match=r"hivemem.tmol \(named by HIVEMEM_CONFIG\): no such file"):
        Settings()
    with pytest.raises(ConfigError, match="no such file"):
        RecallParams()
    monkeypatch.setenv("HIVEMEM_CONFIG", str(tmp_path))
    with pytest.raises(ConfigError, match="a folder, not a file"):
        Settings()
    monkeypatch.delenv("HIVEMEM_CONFIG")  # the default file (~/.config/hivemem/config.toml) is optional
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config-here"))
    assert Settings().port == 8765


def test_non_loopback_bind_needs_an_explicit_opt_in_and_its_host_names() -> None:
    with pytest.raises(pydantic.ValidationError, match="without authentication"):
        Settings(host="0.0.0.0", allowed_hosts=["memory.example.com"])
    with pytest.raises(pydantic.ValidationError, match="HIVEMEM_ALLOWED_HOSTS"):
        Settings(host="0.0.0.0", allow_unauthenticated_network=True)
    public = Settings(host="0.0.0.0", allow_unauthenticated_network=True, allowed_hosts=["memory.example.com"])
    assert (public.host, public.allowed_hosts) == ("0.0.0.0", ("memory.example.com",))
    assert Settings(host="::1").host == "::1"


def test_list_settings_read_comma_lists_and_refuse_what_is_not_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_ALLOWED_HOSTS", "Memory.Example.com., *.corp.example , [::1]")
    monkeypatch.setenv("HIVEMEM_CORS_ORIGINS", "https://app.example.com/,http://localhost:3000")
    settings = Settings()
    assert settings.allowed_hosts == ("memory.example.com", "*.corp.example", "::1")
    assert settings.cors_origins == ("https://app.example.com", "http://localhost:3000")
    with pytest.raises(pydantic.ValidationError, match="not host names"):
        Settings(allowed_hosts=["memory.example.com:8765"])
    with pytest.raises(pydantic.ValidationError, match="not origins"):
        Settings(cors_origins=["app.example.com"])


def test_only_redis_brokers_are_accepted() -> None:
    assert Settings(broker_url="redis://localhost:6379/0").broker_url == "redis://localhost:6379/0"
    assert Settings(broker_url="rediss://:pw@cache:6380/1").broker_url.startswith("rediss://")
    for url in ("amqp://guest@localhost//", "localhost:6379", "sqs://"):
        with pytest.raises(pydantic.ValidationError, match="not a supported broker"):
            Settings(broker_url=url)


def test_urls_are_redacted_for_logs() -> None:
    assert (
        redact_url("opensearch+https://admin:S3cret!@os:9200/?index=x")
        == "opensearch+https://admin:***@os:9200/?index=x"
    )
    assert redact_url("redis://:hunter2@cache:6379/0") == "redis://:***@cache:6379/0"
    assert redact_url("sqlite:////data/hivemem.db") == "sqlite:////data/hivemem.db"
    assert redact_url("redis://localhost:6379/0") == "redis://localhost:6379/0"


def test_public_settings_hide_url_passwords() -> None:
    settings = Settings(store_url="opensearch+https://admin:pw@os:9200", broker_url="redis://:pw2@cache:6379/0")
    public = settings.public_dict()
    assert public["store_url"] == "opensearch+https://admin:***@os:9200"
    assert public["broker_url"] == "redis://:***@cache:6379/0"


def test_the_trace_collector_is_an_http_url_and_tracing_is_off_without_one() -> None:
    from api.process.tracing import start_tracing

    assert Settings(otel_endpoint=" http://collector:4318/ ").otel_endpoint == "http://collector:4318"
    for bad in ("collector:4318", "grpc://collector:4317", "http://", "http://a b"):
        with pytest.raises(pydantic.ValidationError, match="otel_endpoint"):
            Settings(otel_endpoint=bad)
    assert Settings(otel_endpoint="https://u:secret@otel.example.com").public_dict()["otel_endpoint"] == (
        "https://u:***@otel.example.com"
    )
    assert start_tracing(Settings(), "gateway") is False  # the default: no traces, nothing set up


def test_the_cli_server_is_named_by_hivemem_url_or_hivemem_server_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_URL", "http://memory.internal:8765")
    assert Settings().server_url == "http://memory.internal:8765"
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")  # the long name wins when both are set
    assert Settings().server_url == "off"
    assert Settings(server_url="http://other:1").server_url == "http://other:1"


def test_the_device_is_cpu_or_a_cuda_device() -> None:
    assert Settings(embed_device="cuda:1").embed_device == "cuda:1"
    for wrong in ("gpu", "CUDA", "cuda:", "cuda:x", "mps"):
        with pytest.raises(pydantic.ValidationError, match="embed_device"):
            Settings(embed_device=wrong)


STORED = ["memorize", "--title", "WAL mode", "--content", "The store runs in WAL mode."]


def _tuning_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str) -> Path:
    """A config file whose ``[tuning]`` table is ``table``, in force, over a data folder not made yet;
    the CLI opens the store itself (no server)."""
    config = tmp_path / "hivemem.toml"
    config.write_text(f"[tuning]\n{table}\n")
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    monkeypatch.setenv("HIVEMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HIVEMEM_SERVER_URL", "off")
    return config


def _refused_by_every_command(refusal: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The processes, ``config`` and commands that open the store each exit 2 saying ``refusal``."""
    from api.cli import main as cli_main

    commands = (["config"], ["serve"], ["mcp"], ["worker"], ["beat"], STORED, ["memory", "list"], ["token", "list"])
    for command in commands:
        assert cli_main(command) == 2, command
        assert refusal in capsys.readouterr().err, command


def test_a_key_of_the_tuning_table_that_no_group_owns_is_refused_where_processes_start_or_the_store_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each group takes only its own keys from [tuning]: a misspelt one would be ignored silently.
    from api.settings_catalogue import refuse_invalid_tuning

    config = _tuning_file(tmp_path, monkeypatch, "bm25_wieght = 0.4\ncontext_weight = 0.3")
    with pytest.raises(ConfigError, match=r"\[tuning\] bm25_wieght is not a tuning parameter"):
        refuse_invalid_tuning()
    _refused_by_every_command("bm25_wieght is not a tuning parameter", capsys)
    assert not (tmp_path / "data").exists()  # refused before anything was opened or made
    config.write_text("[tuning]\ncontext_weight = 0.3\n")
    refuse_invalid_tuning()


def test_a_tuning_value_out_of_bounds_is_refused_before_anything_is_opened_or_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Groups are built where they are used, after the store is open: checked only there, a bad value
    # failed serve, mcp and the CLI after they had made an empty database.
    from api.cli import main as cli_main

    config = _tuning_file(tmp_path, monkeypatch, "context_weight = 5.0")
    _refused_by_every_command(f"{config}: [tuning] context_weight: Input should be less than or equal to 1", capsys)
    monkeypatch.setenv("HIVEMEM_JOB_RETRIES", "-1")  # the environment names its variable; all are said
    assert cli_main(STORED) == 2
    refusal = capsys.readouterr().err
    assert "[tuning] context_weight: Input should be less than or equal to 1" in refusal
    assert "HIVEMEM_JOB_RETRIES: Input should be greater than or equal to 0" in refusal
    monkeypatch.setenv("HIVEMEM_CONTEXT_WEIGHT", "0.2")  # the environment wins over the file
    monkeypatch.delenv("HIVEMEM_JOB_RETRIES")
    monkeypatch.setenv("HIVEMEM_KNOWLEDGE_CHUNK_OVERLAP", "5000")  # a check across parameters
    assert cli_main(["config"]) == 2
    assert capsys.readouterr().err == (
        "error: Knowledge tuning: Value error, knowledge_chunk_overlap (5000) must be below "
        "knowledge_chunk_chars (1200)\n"
    )
    monkeypatch.delenv("HIVEMEM_KNOWLEDGE_CHUNK_OVERLAP")
    assert cli_main(["config"]) == 0
    assert '"context_weight": 0.2' in capsys.readouterr().out
    assert not (tmp_path / "data").exists()


def test_a_key_of_the_tuning_table_sets_its_parameter_and_every_other_group_reads_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from api.settings_catalogue import TUNING_GROUPS
    from hivemem.limits import Limits
    from search.recall_params import RecallParams

    config = tmp_path / "hivemem.toml"
    config.write_text("[tuning]\ncontext_weight = 0.3\nmax_tags = 30\n")
    monkeypatch.setenv("HIVEMEM_CONFIG", str(config))
    assert RecallParams().context_weight == 0.3
    assert Limits().max_tags == 30
    for group in TUNING_GROUPS:  # each takes its own keys and none of the others'
        group()
    monkeypatch.setenv("HIVEMEM_CONTEXT_WEIGHT", "0.25")  # the environment wins over the file
    assert RecallParams().context_weight == 0.25
