"""The headline block: for every pairing of engine labels that ran the same model with the same settings on
the same machine, the ratio of ESS/s per model with a bootstrap interval, and the geometric mean over models.

Warm figures exclude compile time; cold ones charge every repeat its group's largest compile time (the uncached
build). Only valid runs of campaigns (not of scaling studies) enter, and only runs on the same data.
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd

from reports.stats import ratios_with_geomean
from runner.engines import ENGINES
from runner.records import MEASUREMENT_FIELDS as KEYS
from runner.records import PROBLEM_FIELDS

# The engine setup of a label, as the claims and the Stan-side comparison need it.
SETUP = ["label", "engine", "family", "front_end", "device", "precision"]


def label_rank(setup: dict) -> tuple:
    """Which side of a pairing is the numerator: GPU before CPU, then the registry's engine order (JAX engines
    before Stan, BlackJAX before NumPyro), float32 before float64. "NumPyro-GPU ≈ k× Stan-CPU" then always reads
    as "how much faster is the newer way"."""
    engine = ENGINES.get(setup["engine"])
    return (setup["device"] != "gpu", engine.order if engine else len(ENGINES), setup["precision"] != "float32",
            setup["label"])


def comparisons(runs: pd.DataFrame) -> list[dict]:
    """One entry per (machine, size preset, numerator label, denominator label) with its per-model and
    geometric-mean ratios."""
    campaign = runs[runs.study == ""]
    ok = campaign[campaign.valid]
    invalid = campaign[~campaign.valid].groupby(KEYS).size().to_dict()
    pairings: dict[tuple, list[dict]] = {}
    setups: dict[str, dict] = {}
    for key, group in ok.groupby(PROBLEM_FIELDS, sort=True):
        problem = dict(zip(PROBLEM_FIELDS, key))
        found = sorted((dict(zip(SETUP, values)) for values in group[SETUP].drop_duplicates().itertuples(index=False)),
                       key=label_rank)
        setups.update({setup["label"]: setup for setup in found})
        for num, den in combinations([setup["label"] for setup in found], 2):
            a, b = group[group.label == num], group[group.label == den]
            cold_known = not (a.compile_cached.all() or b.compile_cached.all())
            pairings.setdefault((problem["machine"], problem["size"], num, den), []).append({
                **{k: problem[k] for k in ("model_id", "size", "config_hash", "data_hash")},
                "repeats": (len(a), len(b)),
                "invalid": invalid.get((*key, num), 0) + invalid.get((*key, den), 0),
                "warm_values": (a.ess_per_s.tolist(), b.ess_per_s.tolist()),
                "cold_values": (a.ess_per_s_cold.tolist(), b.ess_per_s_cold.tolist()) if cold_known else None,
            })
    out = []
    for (machine, size, num, den), entries in sorted(pairings.items()):
        warm, warm_geo = ratios_with_geomean([e["warm_values"] for e in entries])
        with_cold = [e for e in entries if e["cold_values"]]
        cold, cold_geo = ratios_with_geomean([e["cold_values"] for e in with_cold]) if with_cold else ([], None)
        cold_by_entry = {id(e): c for e, c in zip(with_cold, cold)}
        models = [{**{k: e[k] for k in ("model_id", "size", "config_hash", "data_hash", "repeats", "invalid")},
                   "warm": w, "cold": cold_by_entry.get(id(e))} for e, w in zip(entries, warm)]
        out.append({"machine": machine, "size": size, "numerator": num, "denominator": den,
                    "numerator_setup": setups[num], "denominator_setup": setups[den], "models": models,
                    "warm": warm_geo, "cold": cold_geo, "cold_models": len(with_cold),
                    "single_repeat": all(max(m["repeats"]) == 1 for m in models)})
    return out


def times(value: float) -> str:
    """A ratio as printed: two significant digits, whole numbers from 100 up (never 1e+02)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.2g}"
