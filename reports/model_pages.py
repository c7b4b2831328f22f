"""A page per model (``models/<id>.html``): its summary rows, every run, its posterior means against the reference
(the parameters furthest from it first) and both programs' source; and the page's file name."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import pandas as pd

from stanjax import models
from stanjax.reports import answer, regimes
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure import references

PARAMETERS_SHOWN = 12  # per model, the parameters furthest from the reference first


def parameter_rows(model_records: list[RunRecord]) -> tuple[list[str], list[dict], str]:
    """Posterior means per engine label (median over valid runs) against the reference, in reference sd.

    Returns the labels, the rows of the parameters furthest from the reference, and where the reference came
    from (or why there is none)."""
    first = model_records[0]
    ref, source = references.applicable(first.model_id, first.size, first.config.resize, first.data_hash)
    if ref is None:
        return [], [], source
    means: dict[str, dict[str, list[float]]] = {}
    for r in model_records:
        if r.valid and r.metrics:
            for name, value in r.metrics.posterior_mean.items():
                means.setdefault(name, {}).setdefault(r.label, []).append(value)
    labels = sorted({label for per in means.values() for label in per})
    rows = []
    for name, per_label in means.items():
        reference = ref["parameters"].get(name)
        if reference is None:
            continue
        cells = {label: float(pd.Series(values).median()) for label, values in per_label.items()}
        z = {label: (cells[label] - reference["mean"]) / reference["sd"] for label in cells}
        rows.append(
            {
                "name": name,
                "ref_mean": reference["mean"],
                "ref_sd": reference["sd"],
                "means": cells,
                "z": z,
                "worst": max(abs(v) for v in z.values()),
            }
        )
    rows.sort(key=lambda row: -row["worst"])
    return labels, rows, source


def model_sections(all_records: Sequence[RunRecord], runs: pd.DataFrame, summary: pd.DataFrame) -> list[dict]:
    """Per model (every registered one, and any other the records hold): its summary rows, every run, the
    parameter agreement table and both programs' source."""
    sections = []
    campaign = runs[runs.study == ""]
    registry = models.registry()
    for model_id in sorted(set(registry) | set(campaign.model_id)):  # a page for every model the index names
        model_runs, spec = campaign[campaign.model_id == model_id], registry.get(model_id)
        by_size = []
        for size in sorted(model_runs["size"].unique()):
            group = [r for r in all_records if r.model_id == model_id and r.size == size and not r.study]
            labels, rows, source = parameter_rows(group)
            by_size.append(
                {
                    "size": size,
                    "labels": labels,
                    "rows": rows[:PARAMETERS_SHOWN],
                    "more": max(len(rows) - PARAMETERS_SHOWN, 0),
                    "source": source,
                }
            )
        sections.append(
            {
                "model_id": model_id,
                "title": answer.title_of(model_id),
                "regime_name": regimes.regime_name(spec.regime) if spec and spec.regime else "",
                "summary": summary[(summary.model_id == model_id) & (summary.study == "")],
                "runs": model_runs,
                "parameters": by_size,
                "description": spec.description if spec else "",
                "regime": spec.regime if spec else "",
                "stan_source": spec.stan_file.read_text() if spec else "",
                "jax_source": spec.jax_file.read_text() if spec else "",
                "stan_file": spec.stan_file.name if spec else "",
                "jax_file": spec.jax_file.name if spec else "",
            }
        )
    return sections


def model_page(model_id: str) -> str:
    """A model's page, relative to the index: ``models/<id>.html`` for an id fit for a file name, else named by
    its hash (an id from a record never becomes a path)."""
    if re.fullmatch(r"[A-Za-z0-9][\w.-]{0,99}", model_id):
        return f"models/{model_id}.html"
    return f"models/model-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}.html"
