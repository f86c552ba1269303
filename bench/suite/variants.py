"""Stage combinations for the recall benchmarks: ``--variant NAME:SETTING=VALUE,...``, run on one store.

Each variant is the run's settings with some changed (``rerank_model=e5-small``,
``query_expansion=prf``, ``bm25_weight=0.4``): the same names as ``HIVEMEM_*`` without the prefix,
validated as settings are. Recall-only changes reuse the bench database built for the corpus; a
change that decides what the store holds (resolution) builds its own. The benchmark answers the
same questions once per variant and reports each with its per-query latency, so one command gives
the comparison table.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.suite.metrics import percentile
from hivemem.config import Settings
from hivemem.errors import ConfigError

__all__ = ["Variant", "latency_ms", "parse_variant", "run_variants", "table"]


@dataclass(frozen=True, slots=True)
class Variant:
    """A name and the settings it changes."""

    name: str
    changes: dict[str, str] = field(default_factory=dict)

    def settings(self, base: Settings) -> Settings:
        """``base`` with this variant's changes, validated; ``ConfigError`` names a bad one."""
        unknown = [key for key in self.changes if key not in Settings.model_fields]
        if unknown:
            raise ConfigError(f"--variant {self.name}: unknown setting(s) {unknown}")
        try:
            return Settings.model_validate({**base.model_dump(), **self.changes})
        except ValueError as exc:
            raise ConfigError(f"--variant {self.name}: {exc}") from exc


def parse_variant(spec: str) -> Variant:
    """``NAME`` or ``NAME:key=value,key=value`` (setting names in lower case, without ``HIVEMEM_``)."""
    name, _, rest = spec.partition(":")
    changes: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--variant {spec!r}: expected NAME:key=value,key=value")
        changes[key.strip().lower().removeprefix("hivemem_")] = value.strip()
    if not name.strip():
        raise ConfigError(f"--variant {spec!r}: the variant needs a name")
    return Variant(name.strip(), changes)


def latency_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of per-query latencies, in milliseconds."""
    if not seconds:
        return {"p50_ms": 0.0, "p95_ms": 0.0}
    return {
        "p50_ms": round(statistics.median(seconds) * 1000, 1),
        "p95_ms": round(percentile(seconds, 0.95) * 1000, 1),
    }


def table(rows: Sequence[dict[str, Any]], metrics: Sequence[str]) -> str:
    """A Markdown table of the variants: name, what it changes, each metric, p50 and p95."""
    head = ["variant", "changes", *metrics, "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        changes = ", ".join(f"{k}={v}" for k, v in row["changes"].items()) or "(defaults)"
        cells = [row["variant"], changes, *(f"{row[m]:.3f}" for m in metrics), str(row["p50_ms"]), str(row["p95_ms"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_variants(
    variants: Sequence[Variant], ask: Callable[[Variant, bool], dict[str, Any]], metrics: Sequence[str]
) -> dict[str, Any]:
    """Each variant's figures from ``ask(variant, fresh)`` (``fresh`` only for the first, so one
    rebuild serves them all), as one report: the first variant's figures at the top level, and
    with several variants, every row (``variants``) and their Markdown ``table``. No variant asks
    once with the settings as they are."""
    rows = [
        {"variant": variant.name, "changes": variant.changes, **ask(variant, i == 0)}
        for i, variant in enumerate(variants or [Variant("default")])
    ]
    report: dict[str, Any] = {k: v for k, v in rows[0].items() if k not in ("variant", "changes")}
    if variants:
        report["variants"] = rows
        report["table"] = table(rows, metrics)
    return report
