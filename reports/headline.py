"""Pairings of engine setups: for every pair of engine labels that ran the same model with the same settings on
the same machine, the ratio of ESS/s per model with a bootstrap interval, and the geometric mean over models;
and the two pairings the report answers first (JAX-GPU and JAX-CPU against Stan-CPU).

Warm figures exclude compile time; cold ones charge every repeat its group's largest compile time (the uncached
build). Only valid runs of campaigns (not of scaling studies) enter, and only runs on the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from reports.stats import ratios_with_geomean
from runner.engines import ENGINES, JAX, STAN
from runner.records import MEASUREMENT_FIELDS as KEYS
from runner.records import PROBLEM_FIELDS

# The engine setup of a label, as the claims, the pairings and the Stan-side comparison need it.
SETUP = ["label", "engine", "family", "front_end", "device", "precision", "chain_method"]


def label_rank(setup: dict) -> tuple:
    """Which side of a pairing is the numerator: GPU before CPU, then the registry's engine order (JAX engines
    before Stan, BlackJAX before NumPyro), float32 before float64. "NumPyro-GPU ≈ k× Stan-CPU" then always reads
    as "how much faster is the newer way"."""
    engine = ENGINES.get(setup["engine"])
    return (setup["device"] != "gpu", engine.order if engine else len(ENGINES), setup["precision"] != "float32",
            setup["label"])


def is_jax(device: str) -> Callable[[dict], bool]:
    return lambda setup: setup["family"] == JAX and setup["device"] == device


def is_stan(setup: dict) -> bool:
    """Stan through a current front end (the bundled Stan or CmdStan; records made through pystan are not)."""
    return setup["family"] == STAN and setup["front_end"] not in ENGINES[setup["engine"]].retired


def is_current(setup: dict) -> bool:
    engine = ENGINES.get(setup["engine"])
    return engine is not None and setup["front_end"] not in engine.retired


def preference(setup: dict) -> tuple:
    """Where several setups fit one side of a pairing, the one shown: NumPyro before the other JAX engines, an
    engine's default front end (the bundled Stan before CmdStan), its device's default precision and chain
    method, full float32 before TF32."""
    engine = ENGINES.get(setup["engine"])
    defaults = engine.defaults.get(setup["device"], (None, None)) if engine else (None, None)
    return (setup["engine"] != "numpyro", not engine or setup["front_end"] != next(iter(engine.front_ends)),
            setup["precision"] != defaults[0], setup["chain_method"] != defaults[1], "tf32" in setup["label"],
            setup["label"])


@dataclass(frozen=True)
class Pairing:
    """A question the report answers first: how fast is ``numerator`` against ``denominator`` (families and
    devices; the setup shown is the preferred one that ran)."""

    key: str  # the HTML anchor of its regime map
    numerator_name: str
    denominator_name: str
    numerator: Callable[[dict], bool]
    denominator: Callable[[dict], bool]

    @property
    def title(self) -> str:
        return f"{self.numerator_name} vs {self.denominator_name}"


PAIRINGS = (Pairing("jax-gpu-vs-stan-cpu", "JAX-GPU", "Stan-CPU", is_jax("gpu"), is_stan),
            Pairing("jax-cpu-vs-stan-cpu", "JAX-CPU", "Stan-CPU", is_jax("cpu"), is_stan))


def is_stan_side(comparison: dict) -> bool:
    """Stan against Stan (front ends), or against the retired pystan driver: the "Stan side" section's, not the
    headline's."""
    a, b = comparison["numerator_setup"], comparison["denominator_setup"]
    return (a["family"] == STAN and b["family"] == STAN) or not (is_current(a) and is_current(b))


def comparisons(runs: pd.DataFrame) -> list[dict]:
    """One entry per (machine, size preset, numerator label, denominator label) with its per-model and
    geometric-mean ratios, and the models it leaves out (both labels ran them there, but no valid pair)."""
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
                "newest": max(a.created.max(), b.created.max()),
                "repeats": (len(a), len(b)),
                "invalid": invalid.get((*key, num), 0) + invalid.get((*key, den), 0),
                "warm_values": (a.ess_per_s.tolist(), b.ess_per_s.tolist()),
                "cold_values": (a.ess_per_s_cold.tolist(), b.ess_per_s_cold.tolist()) if cold_known else None,
            })
    out = []
    for (machine, size, num, den), entries in sorted(pairings.items()):
        entries = newest_per_model(entries)
        warm, warm_geo = ratios_with_geomean([e["warm_values"] for e in entries])
        with_cold = [e for e in entries if e["cold_values"]]
        cold, cold_geo = ratios_with_geomean([e["cold_values"] for e in with_cold]) if with_cold else ([], None)
        cold_by_entry = {id(e): c for e, c in zip(with_cold, cold)}
        models = [{**{k: e[k] for k in ("model_id", "size", "config_hash", "data_hash", "repeats", "invalid",
                                        "warm_values")},
                   "warm": w, "cold": cold_by_entry.get(id(e))} for e, w in zip(entries, warm)]
        here = campaign[(campaign.machine == machine) & (campaign["size"] == size)]
        out.append({"machine": machine, "size": size, "numerator": num, "denominator": den,
                    "numerator_setup": setups[num], "denominator_setup": setups[den], "models": models,
                    "left_out": left_out(here, num, den, {m["model_id"] for m in models}),
                    "warm": warm_geo, "cold": cold_geo, "cold_models": len(with_cold),
                    "single_repeat": all(max(m["repeats"]) == 1 for m in models)})
    return out


def newest_per_model(entries: list[dict]) -> list[dict]:
    """One entry per model, so a geometric mean counts each model once: where a model has valid pairs under
    several settings or data on one machine and size (its spec changed its target acceptance, say), the pair with
    the newest runs, its current ones; the others stay in the run tables."""
    newest: dict[str, dict] = {}
    for entry in entries:
        if entry["model_id"] not in newest or entry["newest"] > newest[entry["model_id"]]["newest"]:
            newest[entry["model_id"]] = entry
    return [entry for entry in entries if newest[entry["model_id"]] is entry]


def left_out(here: pd.DataFrame, num: str, den: str, paired: set[str]) -> list[dict]:
    """Models both labels ran on this machine at this size that have no ratio, and why: a geometric mean is
    stated with the models it leaves out, never silently over fewer."""
    out = []
    for model_id, runs in here[here.label.isin([num, den])].groupby("model_id", sort=True):
        if model_id in paired or set(runs.label) != {num, den}:
            continue
        no_valid = [label for label in (num, den) if not runs[runs.label == label].valid.any()]
        out.append({"model_id": model_id, "why": f"no valid {' or '.join(no_valid)} run" if no_valid
                    else "no valid runs of both with the same settings and data"})
    return out
