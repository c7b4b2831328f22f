"""The index's table of every model: one row per model of the CPU answer (``reports.answer.overview``'s rows, at
each model's best-evidenced ratio), with what a reader sorts by to find their own model's neighbours: its family
and regime, its size (parameters, data rows), each side's ms per gradient, ESS/s, time to 1,000 effective draws
and compilation, the ratio with its interval, the machine and the Stan build the ratio divides by. Regimes come
along the work of a gradient (the crossover figure's order); a cell's ``v`` is the number its column sorts by in
the browser (``templates/report.html``'s few lines of script), its ``text`` what the page shows without one."""

from __future__ import annotations

import math

import pandas as pd

from stanjax.reports.crossover import ratio_runs
from stanjax.reports.headline import cold_compile_s
from stanjax.reports.numbers import count, interval, number, times
from stanjax.reports.regimes import MEASURED

# (key, header, numeric): the table's columns, in order
COLUMNS = (
    ("model", "model", False),
    ("family", "family", False),
    ("regime", "regime", False),
    ("parameters", "parameters", True),
    ("rows", "data rows", True),
    ("stan_ms", "Stan ms / gradient", True),
    ("jax_ms", "JAX ms / gradient", True),
    ("stan_ess", "Stan ESS/s", True),
    ("jax_ess", "JAX ESS/s", True),
    ("ratio", "JAX ÷ Stan, ESS/s (90 % interval)", True),
    ("stan_result", "Stan s to 1,000 ESS", True),
    ("jax_result", "JAX s to 1,000 ESS", True),
    ("stan_compile", "Stan compile s (cold)", True),
    ("jax_compile", "JAX compile s", True),
    ("machine", "machine", False),
    ("stan_build", "Stan build", False),
)


def cell(value: float | None, text: str | None = None, whole: bool = False) -> dict:
    """A numeric cell: its shown text (``text``, else the value's: a count where ``whole``) and its sort value
    ("" where there is none: sorted last)."""
    if value is None or not math.isfinite(value):
        return {"text": "–", "v": ""}
    return {"text": text or (count(round(value)) if whole else number(value)), "v": f"{value:.6g}"}


def side(campaign: pd.DataFrame, entry: dict, label: str, cold: pd.Series) -> dict:
    """One side of a ratio's valid runs: medians of ms per gradient, ESS/s, time to 1,000 effective draws, cold
    compilation (the uncached build where a run paid it, else what the runs paid) and of the size columns."""
    runs = ratio_runs(entry, campaign, label)
    compile_s = cold.reindex(runs.index).fillna(runs.compile_s)
    return {
        "ms": runs.ms_per_gradient.median(),
        "ess": runs.ess_per_s.median(),
        "result": runs.time_to_result_s.median(),
        "compile": compile_s.median(),
        "parameters": runs.n_parameters.median(),
        "rows": runs.n_rows.median(),
    }


def rows(cpu_rows: list[dict], campaign: pd.DataFrame, order: list[str]) -> list[dict]:
    """The table's rows (a list of cells in ``COLUMNS``' order, with the row's ``model_id`` and ``verdict``):
    regimes in ``order`` first (the crossover figure's), then the rest; within a regime by Stan's ms per
    gradient, models without a ratio last."""
    cold = cold_compile_s(campaign)
    ranked = {regime: i for i, regime in enumerate(dict.fromkeys(order))}
    out = []
    for r in cpu_rows:
        family = r["counted_as"] if r["counted_as"] != r["title"] else ""
        text = {"model": r["title"], "family": family, "regime": r["regime"]}
        cells = {key: {"text": value, "v": value.lower()} for key, value in text.items()}
        if r["entries"]:
            e = r["entries"][0]
            stan, jax = side(campaign, e, e["denominator"], cold), side(campaign, e, e["numerator"], cold)
            ratio = e["ratio"]
            shown = (
                interval(ratio) if e["state"] == MEASURED else f"{times(ratio.value)} ({count(ratio.blocks)} blocks)"
            )
            cells |= {
                "parameters": cell(stan["parameters"], whole=True),
                "rows": cell(stan["rows"], whole=True),
                "stan_ms": cell(stan["ms"]),
                "jax_ms": cell(jax["ms"]),
                "stan_ess": cell(stan["ess"]),
                "jax_ess": cell(jax["ess"]),
                "ratio": cell(ratio.value, shown),
                "stan_result": cell(stan["result"]),
                "jax_result": cell(jax["result"]),
                "stan_compile": cell(stan["compile"]),
                "jax_compile": cell(jax["compile"]),
                "machine": {"text": e["machine"], "v": e["machine"]},
                "stan_build": {"text": e["denominator"], "v": e["denominator"]},
            }
            verdict, work = (e["direction"] if e["state"] == MEASURED else "no-verdict"), stan["ms"]
        else:
            why = r["why"].split(":")[0].split(" (")[0]
            cells |= {key: cell(None) for key, _, numeric in COLUMNS if numeric}
            cells |= {"ratio": {"text": why, "v": ""}, "machine": cell(None), "stan_build": cell(None)}
            verdict, work = "none", math.inf
        out.append(
            {
                "model_id": r["model_id"],
                "verdict": verdict,
                "cells": [cells[key] for key, _, _ in COLUMNS],
                "order": (ranked.get(r["regime"], len(ranked)), r["regime"], work if math.isfinite(work) else math.inf),
            }
        )
    return sorted(out, key=lambda row: row["order"])
