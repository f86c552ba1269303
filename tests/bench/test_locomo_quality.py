"""Recall quality on the LoCoMo dev conversations with the real model: the figures the product promises.

A long form (``--quality``), as the other real-model quality runs are: it embeds the five dev
conversations with the real model (a minute) and, with each leg alone, checks that the fusion beats
both (two minutes more). Runs only where the benchmark data folder sits beside the repository
(``../shared/data``). The default suite checks the real model's behaviour on small cases
(tests/workers/test_embed_model.py, test_resolution_model.py, test_knowledge_model.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.suite.locomo import run_locomo
from hivemem.config import Settings
from hivemem.model import FusionMethod, RetrievalMode

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo-dev.json"

pytest.importorskip("torch", reason="the embed extra (torch) is not installed")
pytestmark = [
    pytest.mark.model,
    pytest.mark.data,
    pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo dev data not found at {LOCOMO}"),
]


def test_hybrid_reaches_the_target_and_beats_each_leg(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--quality"):
        pytest.skip("the long form: --quality embeds the LoCoMo dev conversations with the real model")
    settings = Settings(data_dir=tmp_path)
    modes = list(RetrievalMode)
    hit5 = {mode: run_locomo(LOCOMO, settings, mode=mode, fusion=FusionMethod.MINMAX)["hit@5"] for mode in modes}
    # 0.755 measured with every stage at its default (bench/RESULTS.md); without the thread lift 0.728.
    # The margin is for another CPU's float arithmetic flipping a few close ranks.
    assert hit5[RetrievalMode.HYBRID] >= 0.745
    assert hit5[RetrievalMode.HYBRID] > hit5[RetrievalMode.BM25]
    assert hit5[RetrievalMode.HYBRID] > hit5[RetrievalMode.DENSE]
