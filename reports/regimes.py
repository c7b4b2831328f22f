"""Regime maps: for each pairing the report answers (``headline.PAIRINGS``), models grouped by regime against
machine and size, whose every cell is a ratio with its interval or says why there is none.

A cell is "measured" (a ratio from at least ``stats.MIN_BLOCKS`` paired blocks of one campaign, not tiny data),
"insufficient data" (a ratio, but from fewer blocks or from tiny data), "invalid" (runs on both sides, none valid
on one) or "not measured" (no run on a side that an answer may use, or no block with both). Only runs an answer
may use (``headline.answerable``: clean, not superseded) decide a cell; the others are counted in its text.
"""

from __future__ import annotations

import re

import pandas as pd

from stanjax import models
from stanjax.reports.headline import PAIRINGS, SETUP, Pairing, answerable, left_out_text, preference
from stanjax.reports.numbers import count, interval, speed
from stanjax.reports.stats import MIN_BLOCKS, Ratio, block_ratios_with_geomean

MEASURED, INSUFFICIENT, INVALID, NOT_MEASURED = "measured", "insufficient data", "invalid", "not measured"
FASTER, SLOWER, UNCLEAR = "faster", "slower", "no clear difference"
UNREGISTERED = "not in this checkout's model registry"


def regime_of(model_id: str) -> str:
    spec = models.registry().get(model_id)
    return spec.regime if spec and spec.regime else UNREGISTERED


def regime_name(regime: str) -> str:
    """A regime's short name: its description up to the first colon or semicolon."""
    return re.split(r"[:;]", regime, maxsplit=1)[0]


def regime_detail(regime: str) -> str:
    """The rest of a regime's description, after its short name."""
    return regime[len(regime_name(regime)) + 1 :].strip()


def setups(frame: pd.DataFrame) -> list[dict]:
    return [dict(zip(SETUP, values)) for values in frame[SETUP].drop_duplicates().itertuples(index=False)]


def side(frame: pd.DataFrame, predicate) -> tuple[str | None, pd.DataFrame]:
    """The preferred label among the runs whose setup fits ``predicate`` (one with a valid run first), and its
    runs."""
    fitting = [s for s in setups(frame) if predicate(s)]
    if not fitting:
        return None, frame.iloc[0:0]
    valid_labels = set(frame[frame.valid].label)
    chosen = min(fitting, key=lambda s: (s["label"] not in valid_labels, preference(s)))["label"]
    return chosen, frame[frame.label == chosen]


def find(comparisons: list[dict], machine: str, size: str, num: str, den: str, model_id: str):
    """The per-model entry of ``num`` ÷ ``den`` (either orientation: the ratio turned to ``num`` ÷ ``den``, and
    whether it was turned), the one with the most blocks where settings or data differ."""
    found = []
    for c in comparisons:
        if (c["machine"], c["size"]) != (machine, size):
            continue
        for m in c["models"]:
            if m["model_id"] != model_id:
                continue
            if (c["numerator"], c["denominator"]) == (num, den):
                found.append((m, m["warm"], False))
            elif (c["numerator"], c["denominator"]) == (den, num):
                found.append((m, inverted(m["warm"]), True))
    return max(found, key=lambda item: item[0]["blocks"], default=(None, None, None))


def inverted(ratio: Ratio) -> Ratio:
    return Ratio(1 / ratio.value, 1 / ratio.high, 1 / ratio.low, ratio.blocks)


def direction(ratio: Ratio) -> str:
    return FASTER if ratio.low > 1 else SLOWER if ratio.high < 1 else UNCLEAR


def valid_text(label: str, runs: pd.DataFrame) -> str:
    failed = sorted({gate for gates in runs[~runs.valid].failed_gates for gate in gates.split(", ") if gate})
    return f"{label} {count(runs.valid.sum())} of {count(len(runs))} valid" + (
        f" (failed: {', '.join(failed)})" if failed else ""
    )


def cell(every: pd.DataFrame, comparisons: list[dict], pairing: Pairing, machine: str, size: str) -> dict:
    """One model on one machine at one size (``every``: all its runs there): the pairing's ratio from the runs an
    answer may use, or why there is none."""
    here = every[answerable(every)]
    num, num_runs = side(here, pairing.numerator)
    den, den_runs = side(here, pairing.denominator)
    if num is None or den is None:
        missing = [
            (name, predicate)
            for name, label, predicate in (
                (pairing.numerator_name, num, pairing.numerator),
                (pairing.denominator_name, den, pairing.denominator),
            )
            if label is None
        ]
        kinds = [s["label"] for s in setups(every) if any(predicate(s) for _, predicate in missing)]
        dropped = left_out_text(every[every.label.isin(kinds)])
        return {
            "state": NOT_MEASURED,
            "text": f"no {' or '.join(name for name, _ in missing)} run"
            + (f" an answer may use ({dropped})" if dropped else ""),
        }
    dropped = left_out_text(every[every.label.isin([num, den])])
    out = {
        "numerator": num,
        "denominator": den,
        "machine": machine,
        "size": size,
        "valid": f"{valid_text(num, num_runs)}; {valid_text(den, den_runs)}"
        + (f"; left out: {dropped}" if dropped else ""),
        "sizes": num_runs.sizes_text.iloc[0],
    }
    if not (num_runs.valid.any() and den_runs.valid.any()):
        return {**out, "state": INVALID, "text": out["valid"]}
    entry, ratio, flipped = find(comparisons, machine, size, num, den, here.model_id.iloc[0])
    if entry is None:
        return {
            **out,
            "state": NOT_MEASURED,
            "text": "no block with valid runs of both in one campaign, with the same settings and data",
        }
    out |= {
        "ratio": ratio,
        "entry": entry,
        "flipped": flipped,
        "direction": direction(ratio),
        "blocks": f"{count(ratio.blocks)} block{'s' if ratio.blocks > 1 else ''} of campaign {entry['campaign']}"
        + (
            f" ({entry['other_pairings']} other campaign(s) with blocks, not pooled)" if entry["other_pairings"] else ""
        ),
    }
    if ratio.blocks < MIN_BLOCKS:  # no interval at LEVEL: the ratio alone
        reason = f"{count(ratio.blocks)} block{'s' if ratio.blocks > 1 else ''}; {MIN_BLOCKS} needed"
        return {**out, "state": INSUFFICIENT, "reason": reason, "text": f"{speed(ratio.value)} so far: {reason}"}
    if size == "tiny":
        return {**out, "state": INSUFFICIENT, "reason": "tiny data", "text": f"{interval(ratio)}: tiny data"}
    return {**out, "state": MEASURED, "text": interval(ratio)}


def size_order(size: str) -> tuple:
    return (models.SIZE_NAMES.index(size) if size in models.SIZE_NAMES else len(models.SIZE_NAMES), size)


def regime_map(campaign: pd.DataFrame, comparisons: list[dict], pairing: Pairing) -> dict:
    """Models (every registered one, and any other the records hold) grouped by regime, against every machine
    and size where both sides of the pairing ran something."""
    columns = []
    for (machine, size), here in campaign.groupby(["machine", "size"]):
        kinds = setups(here)
        if any(map(pairing.numerator, kinds)) and any(map(pairing.denominator, kinds)):
            columns.append({"machine": machine, "size": size})
    columns.sort(key=lambda c: (c["machine"], size_order(c["size"])))
    model_ids = sorted(set(models.registry()) | set(campaign.model_id))
    groups: dict[str, list[str]] = {}
    for model_id in model_ids:
        groups.setdefault(regime_of(model_id), []).append(model_id)
    out = []
    for regime in sorted(groups, key=lambda r: (r == UNREGISTERED, regime_name(r))):
        rows, not_run = [], []
        by_model: list[list[dict]] = []  # the rows' cells, typed (a row's dict mixes its id and its cells)
        for model_id in groups[regime]:
            if model_id not in set(campaign.model_id):  # one line for them all: the zoo is 64 models
                not_run.append(model_id)
                continue
            cells = []
            for c in columns:
                here = campaign[
                    (campaign.machine == c["machine"])
                    & (campaign["size"] == c["size"])
                    & (campaign.model_id == model_id)
                ]
                cells.append(
                    cell(here, comparisons, pairing, c["machine"], c["size"])
                    if len(here)
                    else {"state": NOT_MEASURED, "text": "no run"}
                )
            rows.append({"model_id": model_id, "cells": cells})
            by_model.append(cells)
        means = [regime_mean([cells[i] for cells in by_model]) for i in range(len(columns))]
        out.append(
            {
                "regime": regime,
                "name": regime_name(regime),
                "detail": regime_detail(regime),
                "rows": rows,
                "not_run": not_run,
                "means": means if any(means) else [],
            }
        )
    return {"pairing": pairing, "columns": columns, "groups": out}


def regime_mean(cells: list[dict]) -> dict | None:
    """The geometric mean over a regime's measured cells of one column (one pair of labels), with its model set;
    None with fewer than two. Secondary to the per-model cells it summarises."""
    measured = [c for c in cells if c["state"] == MEASURED]
    labels = {(c["numerator"], c["denominator"]) for c in measured}
    if len(measured) < 2 or len(labels) != 1:
        return None
    return geometric_mean(measured)


def geometric_mean(cells: list[dict]) -> dict:
    """Geometric mean of the cells' ratios with its bootstrap interval over blocks, oriented as the cells are."""
    per_model = [
        [1 / r for r in c["entry"]["warm_ratios"]] if c["flipped"] else c["entry"]["warm_ratios"] for c in cells
    ]
    _, geo = block_ratios_with_geomean(per_model)
    return {"ratio": geo, "models": [c["entry"]["model_id"] for c in cells], "text": interval(geo)}


def maps(campaign: pd.DataFrame, comparisons: list[dict]) -> list[dict]:
    return [regime_map(campaign, comparisons, pairing) for pairing in PAIRINGS]
