"""Pairings of engine setups: for every pair of engine labels that ran the same model with the same settings on
the same machine, the ratio of ESS/s per model from paired blocks with its interval, and the geometric mean over
models; and the two pairings the report answers first (JAX-GPU and JAX-CPU against Stan-CPU).

A ratio is taken within one block of one pairing (``RunRecord.block_of``: one campaign's back-to-back runs of
every engine setup), never across blocks or campaigns (``reports.stats``). Only runs that may enter an answer do
(``answerable``): valid, clean (a load recorded and not "loaded") and not superseded (``results/SUPERSEDED``), of
campaigns, not of scaling studies. Warm figures exclude compile time; cold ones charge every run its group's
largest compile time among those runs (the uncached build).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from stanjax.reports.stats import MIN_BLOCKS, block_ratios_with_geomean
from stanjax.runner.core.config import is_expert, stanc_options
from stanjax.runner.core.engine_registry import ENGINES, JAX, STAN
from stanjax.runner.core.records import MEASUREMENT_FIELDS as KEYS
from stanjax.runner.core.records import PROBLEM_FIELDS

# What two engine setups must share to be paired: the problem, less the cores, which a campaign gives each lane of
# its own (a GPU campaign's GPU and CPU lanes run at once on disjoint cores, each record says which); the pairing
# (``RunRecord.block_of``) ties the runs of one campaign already.
PAIR_FIELDS = [field for field in PROBLEM_FIELDS if field != "cores"]

# The bundled Stan's front ends: as stanjax builds it, and as httpstan built it (records made before 2026-11-28).
BUNDLED_STAN = ("bundled", "httpstan")

# The engine setup of a label, as the claims, the pairings and the Stan-side comparison need it.
SETUP = ["label", "engine", "family", "front_end", "device", "precision", "chain_method", "program"]


def label_rank(setup: dict) -> tuple:
    """Which side of a pairing is the numerator: GPU before CPU, then the registry's engine order (JAX engines
    before Stan, BlackJAX before NumPyro), float32 before float64. "NumPyro-GPU ≈ k× Stan-CPU" then always reads
    as "how much faster is the newer way"."""
    engine = ENGINES.get(setup["engine"])
    return (
        setup["device"] != "gpu",
        engine.order if engine else len(ENGINES),
        setup["precision"] != "float32",
        setup["label"],
    )


def is_jax(device: str) -> Callable[[dict], bool]:
    return lambda setup: setup["family"] == JAX and setup["device"] == device


def is_stan(setup: dict) -> bool:
    """Stan through a current front end (the bundled Stan or CmdStan; records made through pystan are not)."""
    return setup["family"] == STAN and setup["front_end"] not in ENGINES[setup["engine"]].retired


def is_current(setup: dict) -> bool:
    engine = ENGINES.get(setup["engine"])
    return engine is not None and setup["front_end"] not in engine.retired


def preference(setup: dict) -> tuple:
    """Where several setups fit one side of a pairing, the one shown: NumPyro before the other JAX engines, a
    Stan expert's program before a published one (issue 63: no answer rests on a program an expert would
    rewrite), stanc's default translation before its optimiser's (--O1), an engine's front ends in the
    registry's order (the bundled Stan, then as httpstan built it, then CmdStan), its device's default precision and chain method, full float32 before TF32."""
    engine = ENGINES.get(setup["engine"])
    defaults = engine.defaults.get(setup["device"], (None, None)) if engine else (None, None)
    return (
        setup["engine"] != "numpyro",
        not is_expert(setup.get("program", "")),
        bool(stanc_options(setup.get("program", ""))),
        list(engine.front_ends).index(setup["front_end"]) if engine else len(ENGINES),
        setup["precision"] != defaults[0],
        setup["chain_method"] != defaults[1],
        "tf32" in setup["label"],
        setup["label"],
    )


@dataclass(frozen=True)
class Pairing:
    """A question the report answers first: how fast is ``numerator`` against ``denominator`` (families and
    devices; the setup shown is the preferred one that ran)."""

    key: str  # the HTML anchor of its regime map
    numerator_name: str
    denominator_name: str
    numerator: Callable[[dict], bool]
    denominator: Callable[[dict], bool]
    measured_by: str  # the runs that would answer it, as a command

    @property
    def title(self) -> str:
        return f"{self.numerator_name} vs {self.denominator_name}"


PAIRINGS = (
    Pairing(
        "jax-gpu-vs-stan-cpu",
        "JAX-GPU",
        "Stan-CPU",
        is_jax("gpu"),
        is_stan,
        "stanjax campaign gpu on a machine with a GPU (5 paired blocks a model)",
    ),
    Pairing(
        "jax-cpu-vs-stan-cpu",
        "JAX-CPU",
        "Stan-CPU",
        is_jax("cpu"),
        is_stan,
        "stanjax run --suite full on a quiet machine (5 paired blocks a model)",
    ),
)


def is_nutpie(comparison: dict) -> bool:
    """A side is nutpie (on the Stan program or on NumPyro's potential): the "nutpie" section's, which splits a JAX
    ÷ Stan ratio into its sampler's and its gradient's parts, not the headline's."""
    return any(comparison[side]["engine"].startswith("nutpie") for side in ("numerator_setup", "denominator_setup"))


def is_stan_side(comparison: dict) -> bool:
    """Stan against Stan (front ends), or against the retired pystan driver: the "Stan side" section's, not the
    headline's."""
    a, b = comparison["numerator_setup"], comparison["denominator_setup"]
    return (a["family"] == STAN and b["family"] == STAN) or not (is_current(a) and is_current(b))


def answerable(runs: pd.DataFrame) -> pd.Series:
    """The runs that may enter an answer: clean and not superseded (``left_out`` names why a run may not)."""
    return runs.left_out == ""


def left_out_text(runs: pd.DataFrame) -> str:
    """How many of ``runs`` no answer uses, per reason: "3 loaded, 2 with no load recorded"."""
    counts = runs[~answerable(runs)].left_out.value_counts()
    return ", ".join(
        f"{count} {LEFT_OUT[reason]}"
        for reason, count in sorted(counts.items(), key=lambda item: list(LEFT_OUT).index(item[0]))
    )


def why_no_ratio(runs: pd.DataFrame, labels: list[str], planned: int, paired: int) -> str | None:
    """Why two setups' runs of one problem give no ratio, or one on too few blocks (``paired`` of ``planned``):
    per side its runs, the valid ones, those no answer may use and why (loaded, ...), the gates failed and the runs
    that did not finish; None for a ratio on ``MIN_BLOCKS`` blocks or more."""
    if paired >= MIN_BLOCKS:
        return None
    sides = []
    for label in labels:
        side = runs[runs.label == label]
        gates = Counter(gate for text in side.failed_gates for gate in text.split(", ") if gate)
        parts = [f"{len(side)} run(s)", f"{int(side.valid.sum())} valid", left_out_text(side)]
        parts.append(f"failed {', '.join(f'{gate} ×{n}' for gate, n in gates.items())}" if gates else "")
        parts += [f"{n} {status}" for status, n in side[side.status != "ok"].status.value_counts().items()]
        sides.append(f"{label}: {', '.join(part for part in parts if part)}")
    verdict = "no ratio" if paired == 0 else f"under {MIN_BLOCKS} blocks, no evidence either way"
    return f"{verdict}: {paired} of {planned} block(s) with a valid run of each side that an answer may use; " + (
        "; ".join(sides)
    )


# Why a run may enter no answer (``runner.core.superseded.left_out``, the ``left_out`` column of
# ``reports.runs_table.tidy``).
LEFT_OUT = {
    "no load recorded": "with no load recorded",
    "load not measured": "whose load could not be measured",
    "loaded": "loaded",
    "superseded": "superseded",
}


def cold_compile_s(runs: pd.DataFrame) -> pd.Series:
    """The compilation a run would have paid with a cold cache: its measurement group's largest compile time (the
    uncached build), since a later run may have compiled from a cache; NaN for a group that compiled from a cache
    every time. The one definition of "cold"."""
    ok = runs[runs.valid & runs.compile_s.notna()].groupby(KEYS)
    return ok.compile_s.transform("max").where(~ok.compile_cached.transform("all").astype(bool))


def cold_ess_per_s(runs: pd.DataFrame) -> pd.Series:
    """ESS/s with compilation charged (:func:`cold_compile_s`)."""
    return runs.min_ess_bulk / (runs.user_s + cold_compile_s(runs))


def paired_blocks(a: pd.DataFrame, b: pd.DataFrame) -> dict | None:
    """Two sides' runs aligned block by block: the blocks (``pairing``, ``block``) where both have a run, in the
    one pairing with the most such blocks (ties: the newest), never pooled across pairings; per side and block
    the last run created (a clean rerun beside the loaded run it replaced is the clean one already). None
    without a common block."""

    def last(side):
        return (
            side.sort_values("created", kind="stable")
            .groupby(["pairing", "block"])
            .tail(1)
            .set_index(["pairing", "block"])
        )

    a, b = last(a), last(b)
    common = a.index.intersection(b.index)
    if common.empty:
        return None
    pairings = (
        pd.DataFrame({"blocks": 1, "created": a.loc[common].created.combine(b.loc[common].created, max)}, index=common)
        .groupby(level="pairing")
        .agg({"blocks": "sum", "created": "max"})
    )
    chosen = max(pairings.index, key=lambda p: tuple(pairings.loc[p]))
    blocks = [key for key in common if key[0] == chosen]
    x, y = a.loc[blocks], b.loc[blocks]
    return {
        "pairing": chosen,
        "campaign": ", ".join(sorted(set(x.campaign_id) | set(y.campaign_id))),
        "blocks": len(blocks),
        "other_pairings": len(pairings) - 1,
        "newest": pairings.created[chosen],
        "numerator": x,
        "denominator": y,
    }


def one_change(a: dict, b: dict) -> bool:
    """Whether two setups are worth a comparison of their own: not two Stan setups that differ in more than one of
    the program, how stanc translated it and the front end (the published program with --O1 against the expert's
    without; CmdStan running the expert's program against the bundled Stan running the published one: two changes
    at once, each measured alone beside it)."""
    if a["family"] != STAN or b["family"] != STAN:
        return True
    changes = [
        is_expert(a.get("program", "")) != is_expert(b.get("program", "")),
        stanc_options(a.get("program", "")) != stanc_options(b.get("program", "")),
        a.get("front_end") != b.get("front_end"),
    ]
    return sum(changes) <= 1


def comparisons(runs: pd.DataFrame) -> list[dict]:
    """One entry per (machine, size preset, numerator label, denominator label) with its per-model and
    geometric-mean ratios, and the models it leaves out (both labels ran them there, but no ratio), with why."""
    campaign = runs[runs.study == ""]
    usable = campaign[answerable(campaign)]
    ok = usable[usable.valid].assign(ess_per_s_cold=lambda frame: cold_ess_per_s(frame))
    invalid = usable[~usable.valid].groupby([*PAIR_FIELDS, "label"]).size().to_dict()
    pairings: dict[tuple, list[dict]] = {}
    setups: dict[str, dict] = {}
    for key, group in ok.groupby(PAIR_FIELDS, sort=True):
        problem = dict(zip(PAIR_FIELDS, key))
        found = sorted(
            (dict(zip(SETUP, values)) for values in group[SETUP].drop_duplicates().itertuples(index=False)),
            key=label_rank,
        )
        setups.update({setup["label"]: setup for setup in found})
        for num, den in combinations([setup["label"] for setup in found], 2):
            if not one_change(setups[num], setups[den]):
                continue
            blocks = paired_blocks(group[group.label == num], group[group.label == den])
            if blocks is None:
                continue
            x, y = blocks.pop("numerator"), blocks.pop("denominator")
            cold = x.ess_per_s_cold.to_numpy() / y.ess_per_s_cold.to_numpy()
            pairings.setdefault((problem["machine"], problem["size"], num, den), []).append(
                {
                    **{k: problem[k] for k in ("model_id", "size", "config_hash", "data_hash")},
                    **blocks,
                    "invalid": invalid.get((*key, num), 0) + invalid.get((*key, den), 0),
                    "run_ids": (x.run_id.tolist(), y.run_id.tolist()),
                    "warm_ratios": (x.ess_per_s.to_numpy() / y.ess_per_s.to_numpy()).tolist(),
                    "cold_ratios": cold.tolist() if np.isfinite(cold).all() else None,
                }
            )
    out = []
    for (machine, size, num, den), entries in sorted(pairings.items()):
        entries = newest_per_model(entries)
        warm, warm_geo = block_ratios_with_geomean([e["warm_ratios"] for e in entries])
        with_cold = [e for e in entries if e["cold_ratios"]]
        cold, cold_geo = block_ratios_with_geomean([e["cold_ratios"] for e in with_cold]) if with_cold else ([], None)
        cold_by_entry = {id(e): c for e, c in zip(with_cold, cold)}
        models = [{**e, "warm": w, "cold": cold_by_entry.get(id(e))} for e, w in zip(entries, warm)]
        here = campaign[(campaign.machine == machine) & (campaign["size"] == size)]
        out.append(
            {
                "machine": machine,
                "size": size,
                "numerator": num,
                "denominator": den,
                "numerator_setup": setups[num],
                "denominator_setup": setups[den],
                "models": models,
                "left_out": left_out(here, num, den, {m["model_id"] for m in models}),
                "warm": warm_geo,
                "cold": cold_geo,
                "cold_models": len(with_cold),
                "insufficient": warm_geo.blocks < MIN_BLOCKS,
            }
        )
    return out


def newest_per_model(entries: list[dict]) -> list[dict]:
    """One entry per model, so a geometric mean counts each model once: where a model has paired blocks under
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
        usable = runs[answerable(runs)]
        dropped = [label for label in (num, den) if not (usable.label == label).any()]
        no_valid = [label for label in (num, den) if not usable[usable.label == label].valid.any()]
        why = (
            f"every {' and every '.join(dropped)} run left out of answers "
            f"({left_out_text(runs[runs.label.isin(dropped)])})"
            if dropped
            else f"no valid {' or '.join(no_valid)} run"
            if no_valid
            else "no block with valid runs of both in one campaign, with the same settings and data"
        )
        out.append({"model_id": model_id, "why": why})
    return out
