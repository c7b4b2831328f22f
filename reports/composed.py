"""Composed ESS/s where end-to-end runs do not fit yet: ESS per gradient (the sampler on the posterior: valid runs of
the same model, sizes, sampler, precision, chains and iterations on any machine) × gradients per second on a
machine (measured there before sampling: ``measure: gradient_cost``). Every such number is labelled "composed"; where
the machine also has end-to-end runs of the setup, the two are set side by side (the agreement: measured ÷
composed), and end-to-end blocks replace composed numbers in the answers as they land.

Gradients per second for a run of ``chains`` chains: a vectorised call of all of them costs the measured ms (a GPU
batch); chains in parallel processes each cost a one-chain gradient and run as many at once as the run's cores hold
at the threads each uses. Compilation, a process's start and a vectorised batch's wait for its longest tree are not
in it: a composed ESS/s is an upper bound of the end-to-end one by that much."""

from __future__ import annotations

import pandas as pd

from stanjax.reports.headline import answerable
from stanjax.runner.core import records
from stanjax.runner.core.engine_registry import STAN
from stanjax.runner.measure.gradient_clocks import CLOCK_WORDS, clock_of

CHAINS, WARMUP, DRAWS = 4, 1000, 1000  # the campaigns' setting a composed number is for


def ess_per_gradient(runs: pd.DataFrame) -> dict[tuple, tuple[float, int]]:
    """(model, sizes, side, precision, chains, warmup, draws) -> (median ESS per gradient, runs): min bulk ESS ÷
    every gradient of the run, warmup's included (ESS/s counts warmup's seconds too)."""
    ok = runs[answerable(runs) & runs.valid & runs.gradients_warmup.notna() & (runs.gradients_sampling > 0)]
    ok = ok.assign(
        side=["stan" if f == STAN else "jax" for f in ok.family],
        per_gradient=ok.min_ess_bulk / (ok.gradients_warmup.astype(float) + ok.gradients_sampling),
    )
    keys = ["model_id", "sizes_text", "side", "precision", "chains", "warmup", "draws"]
    return {key: (float(g.per_gradient.median()), len(g)) for key, g in ok.groupby(keys, sort=True)}


def gradients_per_s(cost: dict, chains: int, cores: int) -> float | None:
    """Gradients a second over a run's ``chains``, from a measured cost: a vectorised call of all of them, or one
    chain a process with as many running at once as ``cores`` hold at its threads."""
    if cost["chains"] > 1:
        return cost["chains"] * 1000 / cost["ms_per_gradient"] if cost["chains"] == chains else None
    return min(chains, max(1, cores // cost["threads"])) * 1000 / cost["ms_per_gradient"]


def sizes_text(sizes: dict) -> str:
    return ", ".join(f"{name} = {value:,}" for name, value in sorted(sizes.items()))


def rows(runs: pd.DataFrame, measurements: list[dict]) -> list[dict]:
    """One row per machine and measured setup: the composed ESS/s of a 4-chain, 1,000 + 1,000 run on the cores the
    measurement had (the lane's), and, where the machine has end-to-end runs of the setup, each of their settings
    composed alike beside their measured median (``agreement``)."""
    per_gradient = ess_per_gradient(runs)
    newest = {}
    for m in sorted(measurements, key=lambda m: m.get("created", "")):
        if m.get("measure") == "gradient_cost":
            machine = records.measurement_machine(m).label
            key = (machine, m["side"], m["model_id"], sizes_text(m["sizes"]), m["device"], m["precision"], clock_of(m))
            newest[key] = m
    out = []
    for (machine, side, model_id, sizes, device, precision, clock), cost in sorted(newest.items()):
        label = f"{'Stan' if side == 'stan' else 'JAX'}-{device.upper()} {precision}"
        if side == "stan" and cost["threads"] > 1:
            label += f", {cost['threads']} threads a chain"
        label += f", gradient {CLOCK_WORDS[clock]}"
        found = per_gradient.get((model_id, sizes, side, precision, CHAINS, WARMUP, DRAWS))
        rate = gradients_per_s(cost, CHAINS, cost.get("cpu_threads") or 1)
        row = {
            "machine": machine,
            "model_id": model_id,
            "sizes": sizes,
            "side": side,
            "device": device,
            "precision": precision,
            "label": label,
            "ms_per_gradient": cost["ms_per_gradient"],
            "ess_per_gradient": found[0] if found else None,
            "ess_runs": found[1] if found else 0,
            "composed": found[0] * rate if found and rate else None,
            "validation": [],
        }
        mine = runs[
            (runs.machine == machine)
            & (runs.model_id == model_id)
            & (runs.sizes_text == sizes)
            & (runs.device == device)
            & (runs.precision == precision)
            & runs.valid
            & answerable(runs)
            & ((runs.family == STAN) == (side == "stan"))
        ]
        mine = mine.assign(cores=mine.cores.fillna(0).astype(int))  # 0: not pinned, all the machine's cores
        for (chains, warmup, draws, cores), group in mine.groupby(["chains", "warmup", "draws", "cores"], sort=True):
            setting = per_gradient.get((model_id, sizes, side, precision, chains, warmup, draws))
            rate = gradients_per_s(cost, chains, int(cores) or int(group.machine_cores.iloc[0]))
            if setting and rate:
                measured = float(group.ess_per_s.median())
                composed = setting[0] * rate
                row["validation"].append(
                    {
                        "setting": f"{chains} chains, {warmup:,} + {draws:,}, {int(cores) or 'all'} cores",
                        "runs": len(group),
                        "measured": measured,
                        "composed": composed,
                        "agreement": measured / composed,
                    }
                )
        out.append(row)
    return out


def ratios(composed: list[dict]) -> list[dict]:
    """JAX ÷ Stan of composed ESS/s per machine, model and sizes, each JAX setup against each Stan one."""
    out = []
    for r in composed:
        if r["side"] != "jax" or r["composed"] is None:
            continue
        for s in composed:
            same = (s["machine"], s["model_id"], s["sizes"]) == (r["machine"], r["model_id"], r["sizes"])
            if same and s["side"] == "stan" and s["composed"]:
                out.append(
                    {
                        **{k: r[k] for k in ("machine", "model_id", "sizes")},
                        "numerator": r["label"],
                        "denominator": s["label"],
                        "ratio": r["composed"] / s["composed"],
                    }
                )
    return out
