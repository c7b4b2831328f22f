"""The headline block: for every pairing of engine labels that ran the same model with the same settings on
the same machine, the ratio of ESS/s per model with a bootstrap interval, and the geometric mean over models.

Warm figures exclude compile time; cold ones charge every repeat its group's largest compile time (the uncached
build). Only valid runs of campaigns (not of scaling studies) enter, and only runs on the same data.
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd

from reports.stats import Ratio, ratios_with_geomean

# Which side of a pairing is the numerator: GPU before CPU, JAX engines before Stan, BlackJAX before NumPyro,
# float32 before float64. "NumPyro-GPU ≈ k× Stan-CPU" then always reads as "how much faster is the newer way".
ENGINE_ORDER = {"blackjax_chees": 0, "blackjax_nuts": 1, "numpyro": 2, "stan": 3}
GROUP = ["machine", "model_id", "size", "config_hash", "data_hash"]


def label_rank(label: str, engine: str, device: str, precision: str) -> tuple:
    return (device != "gpu", ENGINE_ORDER.get(engine, len(ENGINE_ORDER)), precision != "float32", label)


def comparisons(runs: pd.DataFrame) -> list[dict]:
    """One entry per (machine, size preset, numerator label, denominator label) with its per-model and
    geometric-mean ratios."""
    campaign = runs[runs.study == ""]
    ok = campaign[campaign.valid]
    invalid = campaign[~campaign.valid].groupby([*GROUP, "label"]).size().to_dict()
    pairings: dict[tuple, list[dict]] = {}
    for key, group in ok.groupby(GROUP, sort=True):
        labels = sorted({(r.label, r.engine, r.device, r.precision) for r in group.itertuples()},
                        key=lambda t: label_rank(*t))
        for (num, *_), (den, *_) in combinations(labels, 2):
            a, b = group[group.label == num], group[group.label == den]
            cold_known = not (a.compile_cached.all() or b.compile_cached.all())
            pairings.setdefault((key[0], key[2], num, den), []).append({
                "model_id": key[1], "size": key[2], "config_hash": key[3], "data_hash": key[4],
                "repeats": (len(a), len(b)), "invalid": invalid.get((*key, num), 0) + invalid.get((*key, den), 0),
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
        out.append({"machine": machine, "size": size, "numerator": num, "denominator": den, "models": models,
                    "warm": warm_geo, "cold": cold_geo, "cold_models": len(with_cold),
                    "single_repeat": all(max(m["repeats"]) == 1 for m in models)})
    return out


def times(value: float) -> str:
    """A ratio as printed: two significant digits, whole numbers from 100 up (never 1e+02)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.2g}"


def interval_text(ratio: Ratio) -> str:
    return f"{times(ratio.low)}–{times(ratio.high)}×"

