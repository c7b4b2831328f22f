"""The published claims read from the scaling studies rather than from a campaign's paired blocks, each a row of
the claims table (``reports.claims``) judged as ``reports.claim_verdicts`` says: Ingram's crossover (the data-size
study: where a JAX engine overtakes Stan in ESS/s along N, which the figures mark too), rlouf's random-walk
Metropolis (draws per second over chain counts) and TFP's sharded log density (the devices study). Only runs an
answer may use reach this module (clean, not superseded: ``headline.answerable``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax.reports.claim_verdicts import (
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    TOLERANCE,
    claim_model,
)
from stanjax.reports.numbers import number, speed, times
from stanjax.runner.core import records
from stanjax.runner.core.engine_registry import JAX, STAN

INGRAM_MATCHES = 50_000
RLOUF_DRAWS, RLOUF_SECONDS = 1e9, 25.0


def crossover(n: np.ndarray, ratio: np.ndarray) -> tuple[float | None, str]:
    """Where ratio (JAX ÷ Stan ESS/s, ordered by N) first crosses 1, interpolated on log-log axes."""
    if (ratio >= 1).all():
        return None, f"JAX ahead at every N measured ({int(n[0]):,}–{int(n[-1]):,})"
    if (ratio < 1).all():
        return None, f"Stan ahead at every N measured ({int(n[0]):,}–{int(n[-1]):,})"
    i = int(np.argmax(ratio >= 1))
    if i == 0:
        return None, f"no single crossover: JAX ÷ Stan ratios {', '.join(times(r) for r in ratio)}"
    log_n = np.log(n[i - 1]) + (0 - np.log(ratio[i - 1])) * (np.log(n[i]) - np.log(n[i - 1])) / (
        np.log(ratio[i]) - np.log(ratio[i - 1])
    )
    return float(
        np.exp(log_n)
    ), f"crossover at N ≈ {float(np.exp(log_n)):,.0f} (between {int(n[i - 1]):,} and {int(n[i]):,})"


def crossovers(study_runs: pd.DataFrame, model_id: str | None) -> list[dict]:
    """Per machine, JAX label and Stan label (current front ends): where the JAX engine overtakes Stan in ESS/s
    along the data-size study's N (medians over valid runs). The figures mark these; the Ingram claim reads them.
    A ``model_id`` of None (no registered model takes the claim) matches no runs: none."""
    out = []
    runs = study_runs[(study_runs.study == "data-size") & (study_runs.model_id == model_id) & study_runs.valid]
    for machine, group in runs.groupby("machine", sort=True):
        for stan_label, stan_runs in group[(group.family == STAN) & ~group.retired].groupby("label", sort=True):
            stan = stan_runs.groupby("n_rows").ess_per_s.median()
            for label, jax in group[group.family == JAX].groupby("label", sort=True):
                both = pd.concat(
                    [jax.groupby("n_rows").ess_per_s.median(), stan], axis=1, keys=["jax", "stan"]
                ).dropna()
                if len(both) >= 2:
                    n, text = crossover(both.index.to_numpy(float), (both.jax / both.stan).to_numpy())
                    out.append(
                        {
                            "machine": machine,
                            "label": label,
                            "stan_label": stan_label,
                            "device": jax.device.iloc[0],
                            "n": n,
                            "text": text,
                        }
                    )
    return out


def ingram_row(runs: pd.DataFrame, regime_maps: list[dict]) -> dict:
    row = {
        "id": "ingram",
        "source": "Ingram 2021",
        "claim": f"GPU overtakes CPU above ~{INGRAM_MATCHES // 1000}k matches (hierarchical Bradley–Terry)",
        "hardware": "his CPU and GPU (2021), not these machines",
        "differs": "the crossover is read from this suite's data-size study (ESS/s medians along N, synthetic "
        "tennis data), NumPyro on the GPU against Stan on the CPU",
    }
    model_id = claim_model("ingram")
    found = crossovers(runs, model_id)
    gpu = [c for c in found if c["device"] == "gpu"]
    if not gpu:
        gpu_runs = runs[(runs.study == "data-size") & (runs.model_id == model_id) & (runs.device == "gpu")]
        if gpu_runs.empty:
            reason = "no GPU runs of Bradley–Terry in the data-size study in these records"
        elif not gpu_runs.valid.any():
            why = sorted({g for g in gpu_runs.failed_gates for g in g.split(", ") if g})
            reason = (
                f"no valid GPU runs of Bradley–Terry in the data-size study: {len(gpu_runs)} GPU run(s), "
                f"none valid (failed: {', '.join(why)})"
            )
        else:
            reason = "valid GPU runs of Bradley–Terry at fewer than two N shared with Stan: no crossover to place"
        measured = reason
        cpu = [f"{c['label']} vs {c['stan_label']} on {c['machine']}: {c['text']}" for c in found]
        measured += f" (on CPU: {'; '.join(cpu)})" if cpu else ""
        context = [
            f"{c['machine']} size {c['size']} ({c['sizes'] or 'sizes not recorded'}): {c['numerator']} ÷ "
            f"{c['denominator']} {c['text']}"
            for m in regime_maps
            if m["pairing"].numerator_name == "JAX-GPU"
            for g in m["groups"]
            for r in g["rows"]
            if r["model_id"] == model_id
            for c in r["cells"]
            if "ratio" in c
        ]
        measured += (
            ". Campaign runs at one size each, which place no crossover: " + "; ".join(context) if context else ""
        )
        return {**row, "measured": measured, "verdict": f"{NOT_MEASURED} ({reason.split(':')[0]})"}
    best = gpu[0]
    measured = "; ".join(f"{c['label']} vs {c['stan_label']} on {c['machine']}: {c['text']}" for c in gpu)
    if best["n"] is None:
        return {**row, "measured": measured, "verdict": f"{NOT_REPRODUCED} (no crossover inside the measured range)"}
    within = INGRAM_MATCHES / 2 <= best["n"] <= INGRAM_MATCHES * 2
    return {
        **row,
        "measured": measured,
        "verdict": (REPRODUCED if within else NOT_REPRODUCED)
        + f" (test: crossover within a factor 2 of {INGRAM_MATCHES:,} matches)",
    }


def rlouf_row(measurements: list[dict]) -> dict:
    """rlouf 2020 (a CPU claim) against the fastest JAX random-walk Metropolis measured on a CPU (draws/s at its
    best chain count); NumPy on the CPU and JAX on a GPU are shown beside it. Inconclusive while the CPU's
    throughput still rises at the most chains measured: a larger batch, or a bigger CPU, might reach the claim."""
    row = {
        "id": "rlouf",
        "source": "rlouf 2020",
        "claim": "1e9 random-walk Metropolis samples in 25 s on CPU with vectorised chains (the PRNG key was "
        "later found never advanced)",
        "hardware": "the author's CPU, none of the machines here",
        "differs": "draws per second of JAX's random-walk Metropolis on rlouf's 1-D mixture, every step with a "
        "fresh PRNG key, at the chain count that is fastest here",
    }
    rwmh = [m for m in measurements if m.get("measure") == "rwmh"]
    best: dict[tuple[str, str], dict] = {}  # (backend, device) -> its fastest measurement
    for m in rwmh:
        key = (m["backend"], records.measurement_device(m))
        if key not in best or m["draws_per_s"] > best[key]["draws_per_s"]:
            best[key] = m

    def where(m: dict) -> str:
        machine = records.measurement_machine(m)
        return (
            (machine.gpu or ["GPU"])[0].split(",")[0]
            if records.measurement_device(m) == "gpu"
            else f"{machine.cpu}, {machine.cores_usable or machine.cores} cores"
        )

    def text(name: str, m: dict) -> str:
        whole = m["chains"] * m["steps"] >= RLOUF_DRAWS
        return f"{name}: {number(m['draws_per_s'])} draws/s at {m['chains']:,} chains ({where(m)}): " + (
            f"{number(m['chains'] * m['steps'])} draws in {number(m['wall_s'])} s, run whole"
            if whole
            else f"1e9 draws in {number(RLOUF_DRAWS / m['draws_per_s'])} s at that rate"
        )

    shown = [
        text(name, best[key])
        for key, name in ((("jax", "cpu"), "JAX-CPU"), (("numpy", "cpu"), "NumPy-CPU"), (("jax", "gpu"), "JAX-GPU"))
        if key in best
    ]
    if ("jax", "cpu") not in best:
        reason = "no random-walk Metropolis study on a CPU in these records"
        return {
            **row,
            "measured": reason + (f" ({'; '.join(shown)})" if shown else ""),
            "verdict": f"{NOT_MEASURED} ({reason})",
        }
    top = best[("jax", "cpu")]
    seconds = RLOUF_DRAWS / top["draws_per_s"]
    same = [
        m
        for m in rwmh
        if (m["backend"], records.measurement_device(m)) == ("jax", "cpu")
        and records.measurement_machine(m).slug == records.measurement_machine(top).slug
    ]
    rising = len(same) > 1 and top["chains"] == max(m["chains"] for m in same)
    if seconds <= RLOUF_SECONDS * TOLERANCE:
        verdict = f"{REPRODUCED} (1e9 draws in {number(seconds)} s, within {number(RLOUF_SECONDS * TOLERANCE)} s)"
    elif rising:
        verdict = (
            f"{INCONCLUSIVE} (JAX on {where(top)}: draws/s still rising at {top['chains']:,} chains, the "
            f"most measured; 1e9 draws in {number(seconds)} s there, against {number(RLOUF_SECONDS)} s "
            "claimed on another machine)"
        )
    else:
        verdict = (
            f"{NOT_REPRODUCED} (JAX on {where(top)}: draws/s levelled off by {top['chains']:,} chains; 1e9 "
            f"draws in {number(seconds)} s, beyond {number(RLOUF_SECONDS * TOLERANCE)} s)"
        )
    return {**row, "measured": "; ".join(shown) + ". Every step draws a fresh PRNG key (tested).", "verdict": verdict}


def devices_row(measurements: list[dict]) -> dict:
    """TFP's sharded log density: ms per gradient on 1 device vs the most devices measured, per model."""
    row = {
        "id": "tfp-devices",
        "source": "TFP on JAX (seed 002)",
        "claim": "data sharded over 8 devices for logistic regression and matrix factorisation (~83 leapfrog steps/s)",
        "hardware": "8 accelerator devices",
        "differs": "here the devices are XLA's split of one CPU (or the GPUs a machine has): the sharded log "
        "density and gradient are tested equal to one device's; a speed-up needs real devices. What "
        "would measure it: `stanjax study devices` on a machine with 8 GPUs",
    }
    rows = [m for m in measurements if m.get("measure") == "sharded_gradient"]
    if not rows:
        return {
            **row,
            "measured": "no multi-device study in these records",
            "verdict": f"{NOT_MEASURED} (no multi-device study in these records)",
        }
    parts = []
    for model_id in sorted({m["model_id"] for m in rows}):
        by_n = {m["devices"]: m["ms_per_gradient"] for m in rows if m["model_id"] == model_id}
        most = max(by_n)
        parts.append(
            f"{model_id}: {number(by_n[min(by_n)])} ms per gradient on {min(by_n)} device(s), "
            f"{number(by_n[most])} ms on {most} ({speed(by_n[min(by_n)] / by_n[most])})"
        )
    backend, most = rows[0]["backend"], max(m["devices"] for m in rows)
    if backend == "cpu":
        verdict = (
            f"{NOT_MEASURED}: the {most} devices are one CPU split by XLA, so a speed-up means nothing; "
            "the sharded log density and gradient equal the single-device ones (tests/campaigns/test_sharding.py)"
        )
    else:
        verdict = (
            REPRODUCED if most >= 8 else NOT_MEASURED + f" (only {most} {backend} devices)"
        ) + " (data rows sharded, parameters replicated; equality with one device is tested)"
    return {**row, "measured": "; ".join(parts), "verdict": verdict}
