"""The REST API against its own OpenAPI: schemathesis, every check (all are on by default; the few
operation-specific exceptions are in schemathesis.toml, with the reason), every operation, real HTTP.

Every phase runs (the schema's examples, its boundaries, random inputs valid and invalid, and
stateful sequences such as memorize → get → forget). A failure prints what schemathesis found and
how to replay it. ``--fuzz-examples N`` makes a longer run; ``--fuzz-seed`` another sequence.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.http.auth import PUBLIC_PATHS
from api.services.caller import Caller
from api.services.memories import MemoryService
from hivemem.config import Settings
from hivemem.token_schemas import TokenCreate
from tests.e2e.helpers import HivememServer

pytestmark = pytest.mark.fuzz

ANY_ID = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def fuzzed_server(tmp_path: Path) -> Iterator[tuple[HivememServer, str]]:
    """A team server (every request needs a token) and a token with every grant, token admin included."""
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    service = MemoryService.from_settings(Settings(data_dir=data_dir, embed_model="hash:64"))
    try:
        root = service.tokens.create(TokenCreate(name="fuzzer", grants=["*:admin"]), Caller(principal="test")).token
    finally:
        service.close()
    server = HivememServer(data_dir, logs, HIVEMEM_TEAM="true", HIVEMEM_RATE_LIMIT_PER_MIN="0")
    server.start()
    try:
        yield server, root
    finally:
        server.stop()


def test_without_a_token_every_operation_is_refused_with_401(fuzzed_server: tuple[HivememServer, str]) -> None:
    server, _ = fuzzed_server
    with httpx.Client(base_url=server.url, timeout=30) as http:
        spec = http.get("/openapi.json").json()
        answered = {
            (method, path): http.request(
                method.upper(), re.sub(r"\{[^}]+\}", "00000000-0000-0000-0000-000000000000", path)
            )
            for path, operations in spec["paths"].items()
            for method in operations
            if path not in PUBLIC_PATHS
        }
    assert len(answered) >= 20
    for (method, path), answer in answered.items():
        assert answer.status_code == 401, f"{method} {path}: {answer.status_code}"
        assert answer.headers["www-authenticate"].startswith("Bearer resource_metadata=")


def _schemathesis(
    server: HivememServer, tmp_path: Path, headers: list[str], examples: int, seed: int, phases: str = ""
) -> str:
    """Run schemathesis on the server's OpenAPI (every phase, or the comma-separated ``phases``); its
    report, once it passed on every operation."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(Path(__file__).with_name("schemathesis.toml")),
        "run",
        f"{server.url}/openapi.json",
        *(f"--header={header}" for header in headers),
        f"--max-examples={examples}",
        f"--seed={seed}",
        *([f"--phases={phases}"] if phases else []),
        "--generation-database=none",
        "--workers=1",
        # No response-time check: how fast a loaded machine answers is the benchmarks' business;
        # the timeout only stops a request that hangs.
        "--request-timeout=120",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    env = {**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, f"{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
    selected = re.search(r"Selected: (\d+)/(\d+)", done.stdout)
    tested = re.search(r"Tested: (\d+)", done.stdout)
    assert selected and tested, done.stdout[-5000:]
    # Every operation of the OpenAPI was fuzzed, none skipped for a schema the fuzzer could not read.
    assert selected.group(1) == selected.group(2) == tested.group(1), done.stdout[-5000:]
    assert int(tested.group(1)) >= 9
    # No request may have broken the server: nothing it logged is an unhandled error.
    assert "Traceback" not in server.log_text(), server.log_text()[-5000:]
    return done.stdout


def test_every_operation_meets_its_schema_under_fuzzing(
    fuzzed_server: tuple[HivememServer, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server, token = fuzzed_server
    examples = request.config.getoption("--fuzz-examples")
    seed = request.config.getoption("--fuzz-seed")
    _schemathesis(server, tmp_path, [f"Authorization: Bearer {token}"], examples, seed)


def test_without_a_token_every_operation_meets_its_schema_under_fuzzing(
    fuzzed_server: tuple[HivememServer, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same run with no token: every answer is the documented 401. Random inputs only, valid and
    invalid, a few per operation: each is refused before its input is read, so the coverage phase's
    2,600 boundary cases (half a minute) would test the same gate again and again, and the stateful
    phase has no answers to link."""
    server, _ = fuzzed_server
    _schemathesis(server, tmp_path, [], 5, request.config.getoption("--fuzz-seed"), phases="fuzzing")
