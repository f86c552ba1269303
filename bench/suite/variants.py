"""Stage combinations for the recall benchmarks: ``--variant NAME:SETTING=VALUE,...``, run on one store.

Each variant is the run's settings and tuning parameters with some changed (``rerank_model=e5-small``,
``query_expansion=prf``, ``bm25_weight=0.4``): the same names as ``HIVEMEM_*`` without the prefix,
validated as settings are. Recall-only changes reuse the bench database built for the corpus; a
change that decides what the store holds (resolution) builds its own. The benchmark answers the
same questions once per variant and reports each with its per-query latency, so one command gives
the comparison table.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from api.settings_catalogue import tuning_group_of
from bench.suite.metrics import percentile
from bench.suite.paired import as_rows, compare_reports
from bench.suite.tuned import tuned
from hivemem.config import Settings
from hivemem.errors import ConfigError

__all__ = ["Variant", "latency_ms", "parse_variant", "run_variants", "table"]


@dataclass(frozen=True, slots=True)
class Variant:
    """A name and the settings it changes."""

    name: str
    changes: dict[str, str] = field(default_factory=dict)

    def settings(self, base: Settings) -> Settings:
        """``base`` with this variant's operator settings changed, every change validated (a tuning
        parameter by its group); ``ConfigError`` names a bad or unknown one."""
        unknown = [key for key in self.changes if key not in Settings.model_fields and not tuning_group_of(key)]
        if unknown:
            raise ConfigError(f"--variant {self.name}: unknown setting(s) {unknown}")
        operator = {k: v for k, v in self.changes.items() if k in Settings.model_fields}
        try:
            for group in {tuning_group_of(key) for key in self._tuning()}:
                assert group is not None
                group.model_validate({k: v for k, v in self._tuning().items() if k in group.model_fields})
            return Settings.model_validate({**base.model_dump(), **operator})
        except ValueError as exc:
            raise ConfigError(f"--variant {self.name}: {exc}") from exc

    def _tuning(self) -> dict[str, str]:
        return {k: v for k, v in self.changes.items() if k not in Settings.model_fields}

    def tuned(self) -> AbstractContextManager[None]:
        """This variant's tuning parameters in force for the length of a block."""
        return tuned(**self._tuning())


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
    """A Markdown table of the variants: name, what it changes, each metric, p50 and p95, and where
    the rows carry it (``against_first``), the questions the first metric gains and loses on the
    first variant, with the sign test's p (:mod:`bench.suite.paired`)."""
    paired = any("against_first" in row for row in rows)
    head = ["variant", "changes", *metrics, "p50 ms", "p95 ms"] + ([f"{metrics[0]} +/- (p)"] if paired else [])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        changes = ", ".join(f"{k}={v}" for k, v in row["changes"].items()) or "(defaults)"
        cells = [row["variant"], changes, *(f"{row[m]:.3f}" for m in metrics), str(row["p50_ms"]), str(row["p95_ms"])]
        if paired:
            first = next((d for d in row.get("against_first", []) if d["metric"] == metrics[0]), None)
            cells.append(f"+{first['better']} / -{first['worse']} ({first['p_value']:.2g})" if first else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _asked(ask: Callable[[Variant, bool], dict[str, Any]], variant: Variant, fresh: bool) -> dict[str, Any]:
    with variant.tuned():
        return ask(variant, fresh)


def run_variants(
    variants: Sequence[Variant], ask: Callable[[Variant, bool], dict[str, Any]], metrics: Sequence[str]
) -> dict[str, Any]:
    """Each variant's figures from ``ask(variant, fresh)`` (``fresh`` only for the first, so one
    rebuild serves them all), as one report: the first variant's figures at the top level, and
    with several variants, every row (``variants``, each after the first with ``against_first``:
    its questions gained and lost on the first's, :mod:`bench.suite.paired`) and their Markdown
    ``table``. No variant asks once with the settings as they are."""
    rows = [
        {"variant": variant.name, "changes": variant.changes, **_asked(ask, variant, i == 0)}
        for i, variant in enumerate(variants or [Variant("default")])
    ]
    report: dict[str, Any] = {k: v for k, v in rows[0].items() if k not in ("variant", "changes")}
    for row in rows[1:]:
        if "per_question" in row and "per_question" in rows[0]:
            row["against_first"] = as_rows(compare_reports(rows[0], row, metrics))
    if variants:
        report["variants"] = rows
        report["table"] = table(rows, metrics)
    return report
