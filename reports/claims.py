"""The published claims this suite exists to test, each judged as its authors made it: one row each, with what the
records measured and a verdict.

A ratio claim is "reproduced" when the 90 % interval of the measured ratio (over paired blocks: ``reports.stats``)
overlaps the claimed value widened by a factor TOLERANCE either way, "not reproduced" when the whole interval lies
outside that band, "insufficient data" when the ratio comes from fewer than ``stats.MIN_BLOCKS`` blocks or from
tiny data, "inconclusive" when the
records cannot reach the claim's conditions (throughput still rising at the most chains measured), and "not
measured here" (with the reason) when the records hold no valid run that speaks to it. Ratio claims are judged per
model and per regime; a mean over models is secondary and names its models. Only runs an answer may use reach
this module (clean, not superseded: ``headline.answerable``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports import answer
from stanjax.reports.headline import is_jax, is_stan, paired_blocks
from stanjax.reports.numbers import count, interval, number, span, speed, times
from stanjax.reports.stats import MIN_BLOCKS, Ratio, block_ratios_with_geomean
from stanjax.runner import records
from stanjax.runner.engines import JAX, STAN

TOLERANCE = 1.5
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
NOT_MEASURED = "not measured here"
INSUFFICIENT = "insufficient data"
INCONCLUSIVE = "inconclusive"
DEPENDS = "depends on the regime"
COVTYPE_ROWS = 500_000  # "covertype size": the large preset has 581,012 rows
INGRAM_MATCHES = 50_000
RLOUF_DRAWS, RLOUF_SECONDS = 1e9, 25.0


def claim_model(claim: str) -> str | None:
    """The model whose runs speak to a claim (``ModelSpec.claims``), or None if no registered model does."""
    return next((spec.id for spec in models.registry().values() if claim in spec.claims), None)


def ratio_verdict(ratio: Ratio, claimed: float, size: str | None = None) -> str:
    """Reproduced or not by the stated band; "insufficient data" for a ratio from fewer than MIN_BLOCKS paired
    blocks (no interval reaches 90 %) or from tiny data (a smoke test, not a measurement)."""
    if ratio.blocks < MIN_BLOCKS:
        return (
            f"{INSUFFICIENT} ({count(ratio.blocks)} blocks; {MIN_BLOCKS} needed: {times(ratio.value)} has no "
            "90 % interval)"
        )
    if size == "tiny":
        return f"{INSUFFICIENT} (measured on tiny data: {times(ratio.value)})"
    low, high = claimed / TOLERANCE, claimed * TOLERANCE
    rule = f"claimed {claimed:g}×, band {span(low, high)}, measured 90 % interval {span(ratio.low, ratio.high)}"
    if ratio.high < low or ratio.low > high:
        return f"{NOT_REPRODUCED} ({rule})"
    return f"{REPRODUCED} ({rule})"


def shown(ratio: Ratio) -> str:
    """A ratio with its interval, or under MIN_BLOCKS blocks the ratio and its blocks (it has no 90 % interval)."""
    return interval(ratio) if ratio.blocks >= MIN_BLOCKS else f"{times(ratio.value)} ({count(ratio.blocks)} blocks)"


VERDICTS = (REPRODUCED, NOT_REPRODUCED, DEPENDS, INSUFFICIENT, INCONCLUSIVE, NOT_MEASURED)


def head(verdict: str) -> str:
    """A verdict without its explanation: "reproduced", "not measured here", ..."""
    return verdict.split(" (")[0].split(":")[0].split(" in every regime")[0]


def verdict_class(verdict: str) -> str:
    """The CSS class the report colours a verdict with."""
    return {REPRODUCED: "reproduced", NOT_REPRODUCED: "not", DEPENDS: "mixed"}.get(head(verdict), "none")


# Maskell's three ratios compare three kinds of setup; all three are judged on one basis (machine, size, models).
KINDS = {"JAX-GPU": is_jax("gpu"), "JAX-CPU": is_jax("cpu"), "Stan-CPU": is_stan}
MASKELL = (
    ("maskell-gpu-stan", "JAX-GPU", "Stan-CPU", 5.0),
    ("maskell-gpu-cpu", "JAX-GPU", "JAX-CPU", 20.0),
    ("maskell-stan-cpu", "Stan-CPU", "JAX-CPU", 4.0),
)


def maskell_basis(campaign: pd.DataFrame, comparisons: list[dict]) -> dict | None:
    """The machine and size where most of Maskell's kinds ran validly, their preferred labels there, and the models
    every pair of them has a ratio for (the rest named, with why): one basis for the three rows."""
    best = None
    for (machine, size), here in campaign.groupby(["machine", "size"], sort=True):
        ok = here[here.valid]
        labels = {
            kind: label for kind, predicate in KINDS.items() if (label := answer.side(ok, predicate)[0]) is not None
        }
        if len(labels) < 2:
            continue
        pairs = [(a, b) for a in labels.values() for b in labels.values() if a < b]
        common = sorted(
            m
            for m in set(ok.model_id)
            if all(answer.find(comparisons, machine, size, a, b, m)[0] is not None for a, b in pairs)
        )
        score = (len(labels), len(common))
        if common and (best is None or score > best["score"]):
            left_out = []
            for model_id, runs in here[~here.model_id.isin(common)].groupby("model_id", sort=True):
                why = [
                    f"no {label} run" if label not in set(runs.label) else f"no valid {label} run"
                    for label in labels.values()
                    if not runs[runs.label == label].valid.any()
                ]
                left_out.append(f"{model_id} ({'; '.join(why) or 'no runs of all with the same settings and data'})")
            best = {
                "machine": machine,
                "size": size,
                "labels": labels,
                "models": common,
                "left_out": left_out,
                "score": score,
            }
    return best


def maskell_row(basis: dict | None, comparisons: list[dict], key: str, num: str, den: str, claimed: float) -> dict:
    row = {
        "id": key,
        "source": "Maskell, StanCon 2024",
        "claim": f"“JAX-GPU = 5× Stan-CPU = 20× JAX-CPU”, this row: {num} ≈ {claimed:g}× {den}",
        "hardware": "the talk's own GPU and CPU, not named in the claim as cited",
        "differs": "the talk's ratios are single figures for its own models; here they are read per model of "
        "this zoo (ESS/s, compile excluded), judged per regime, on the machines these records name",
    }
    if basis is None or num not in basis["labels"] or den not in basis["labels"]:
        where = f" on the basis ({basis['machine']}, size {basis['size']})" if basis else ""
        reason = f"no valid {num} and {den} runs of the same model{where}"
        return {**row, "measured": reason, "verdict": f"{NOT_MEASURED} ({reason})"}
    first, second = basis["labels"][num], basis["labels"][den]
    cells = []
    for model_id in basis["models"]:
        entry, ratio, flipped = answer.find(comparisons, basis["machine"], basis["size"], first, second, model_id)
        cells.append(
            {
                "model_id": model_id,
                "entry": entry,
                "ratio": ratio,
                "flipped": flipped,
                "verdict": ratio_verdict(ratio, claimed, basis["size"]),
            }
        )
    per_model = "; ".join(f"{c['model_id']} {shown(c['ratio'])}: {head(c['verdict'])}" for c in cells)
    regimes: dict[str, list[dict]] = {}
    for c in cells:
        regimes.setdefault(answer.regime_name(answer.regime_of(c["model_id"])), []).append(c)
    by_regime = {}
    for name, members in regimes.items():
        ratio = members[0]["ratio"] if len(members) == 1 else answer.geometric_mean(members)["ratio"]
        by_regime[name] = (ratio_verdict(ratio, claimed, basis["size"]), members)
    heads = {head(v) for v, _ in by_regime.values()}
    if len(heads) == 1:
        verdict = (
            next(iter(by_regime.values()))[0]
            if len(by_regime) == 1
            else f"{heads.pop()} in every regime measured ("
            + (", ".join(by_regime) if len(by_regime) <= 4 else f"{len(by_regime)} regimes")
            + ")"
        )
    else:
        groups: dict[str, list[str]] = {}
        for name, (v, _) in by_regime.items():
            groups.setdefault(head(v), []).append(name)
        verdict = f"{DEPENDS}: " + "; ".join(
            f"{h} for {', '.join(names)}"
            for h, names in sorted(
                groups.items(), key=lambda item: VERDICTS.index(item[0]) if item[0] in VERDICTS else len(VERDICTS)
            )
        )
    regime_text = "; ".join(
        f"{name} ({len(members)} models, geometric mean {shown(answer.geometric_mean(members)['ratio'])}): {head(v)}"
        for name, (v, members) in by_regime.items()
        if len(members) > 1
    )
    geo = answer.geometric_mean(cells)["ratio"] if len(cells) > 1 else None
    measured = (
        f"On {basis['machine']} at size {basis['size']}, the basis of all three Maskell rows: the models "
        f"where {', '.join(basis['labels'].values())} all ran validly"
        + (f" (left out: {'; '.join(basis['left_out'])})" if basis["left_out"] else "")
        + f". {first} ÷ {second} in ESS/s per model (band "
        f"{span(claimed / TOLERANCE, claimed * TOLERANCE)}): {per_model}."
        + (f" Per regime: {regime_text}." if regime_text else "")
        + (f" Secondary: geometric mean over these {len(cells)} models {shown(geo)}." if geo else "")
    )
    return {**row, "measured": measured, "verdict": verdict}


def tran_hoffman_row(runs: pd.DataFrame) -> dict:
    """Time per leapfrog step of one chain, Stan-CPU ÷ JAX-GPU, logistic regression at covertype size, block by
    block. A record's ms per gradient is the whole run's throughput (leapfrog steps summed over its chains); with
    the chains running at once, one chain's step takes that × the chains."""
    row = {
        "id": "tran-hoffman",
        "source": "Tran & Hoffman 2018 (Edward2)",
        "claim": "“NUTS on GPU 100× over Stan, 37× over PyMC3 per leapfrog step”: time per leapfrog step of "
        "NUTS, Bayesian logistic regression on covertype (581,012 × 54)",
        "hardware": "one NVIDIA Tesla V100 GPU against Stan on a CPU",
        "differs": "they timed a leapfrog step of one chain; a record here times a run of 4 chains (a chain's "
        "step = ms per gradient × chains), JAX in float32 on the GPU against Stan in float64, on the "
        "machines the records name, never a V100",
    }
    model_id = claim_model("tran_hoffman")
    big = runs[(runs.model_id == model_id) & (runs.n_rows >= COVTYPE_ROWS)]
    big = big.assign(step_ms=big.ms_per_gradient * big.chains)
    for machine, group in big[big.valid].groupby("machine", sort=True):
        for stan_label, stan in group[(group.family == STAN) & ~group.retired].groupby("label", sort=True):
            for label, jax in group[(group.family == JAX) & (group.device == "gpu")].groupby("label", sort=True):
                blocks = paired_blocks(stan, jax)
                if blocks is None:
                    continue
                x, y = blocks["numerator"], blocks["denominator"]
                [ratio], _ = block_ratios_with_geomean([(x.step_ms.to_numpy() / y.step_ms.to_numpy()).tolist()])
                return {
                    **row,
                    "measured": f"{stan_label} ÷ {label} in time per leapfrog step of one chain at N = "
                    f"{int(y.n_rows.iloc[0]):,}: {times(ratio.value)} on {machine}, median of "
                    f"{count(ratio.blocks)} block(s) of campaign {blocks['campaign']} ({stan_label} "
                    f"{number(x.step_ms.median())} ms, {label} {number(y.step_ms.median())} ms per step; "
                    f"{count(x.chains.iloc[0])} and {count(y.chains.iloc[0])} chains at once, a chain's "
                    "step = ms per gradient × chains)",
                    "verdict": ratio_verdict(ratio, 100, stan["size"].iloc[0]),
                }
    reason = (
        f"no valid Stan-CPU and JAX-GPU runs of logistic regression at N ≥ {COVTYPE_ROWS:,} in one block of a "
        "campaign among these records' clean, non-superseded runs"
    )
    measured = reason
    invalid = big[~big.valid & (big.status == "ok")]
    if not invalid.empty:  # what they measured, so a reader sees why no ratio is stated
        measured += (
            " (invalid runs, not used: "
            + "; ".join(
                f"{r.label} {number(r.step_ms)} ms per leapfrog step of a chain ({number(r.ms_per_gradient)} ms per "
                f"gradient over {count(r.chains)} chains) on {r.machine}, failed {r.failed_gates} "
                f"(max R-hat {number(r.max_rhat)})"
                for r in invalid.itertuples()
            )
            + ")"
        )
        reason = "the runs at covertype size are invalid: " + ", ".join(
            f"{r.label} failed {r.failed_gates}" for r in invalid.itertuples()
        )
    return {**row, "measured": measured, "verdict": f"{NOT_MEASURED} ({reason})"}


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


def crossovers(study_runs: pd.DataFrame, model_id: str) -> list[dict]:
    """Per machine, JAX label and Stan label (current front ends): where the JAX engine overtakes Stan in ESS/s
    along the data-size study's N (medians over valid runs). The figures mark these; the Ingram claim reads them."""
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
    best = {}
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
        return (
            f"{name}: {number(m['draws_per_s'])} draws/s at {m['chains']:,} chains ({where(m)}): 1e9 draws in "
            f"{number(RLOUF_DRAWS / m['draws_per_s'])} s"
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
            "the sharded log density and gradient equal the single-device ones (tests/test_sharding.py)"
        )
    else:
        verdict = (
            REPRODUCED if most >= 8 else NOT_MEASURED + f" (only {most} {backend} devices)"
        ) + " (data rows sharded, parameters replicated; equality with one device is tested)"
    return {**row, "measured": "; ".join(parts), "verdict": verdict}


def irt_side(name: str, runs: pd.DataFrame) -> str:
    ok = runs[runs.valid]
    text = f"{name} {count(len(ok))} of {count(len(runs))} runs valid"
    if ok.empty:
        gates = sorted({g for g in runs.failed_gates for g in g.split(", ") if g})
        return text + (f" (failed: {', '.join(gates)})" if gates else "")
    return (
        f"{text}: min bulk ESS {number(ok.min_ess_bulk.median())}, {count(ok.divergences.sum())} divergences, "
        f"{number(ok.user_s.median())} s for warmup and sampling (medians over valid runs)"
    )


def irt_row(runs: pd.DataFrame) -> dict:
    """Carpenter's claim is about flows where NUTS fails (a centred IRT-2PL's funnels), which this suite does not
    run yet: "not measured here", whatever the records hold. What they hold beside it: whether NUTS fits the
    ~1000-parameter model on each side (a valid run: R-hat, divergences, reference), with what ESS and in what time;
    its items are each answered by every student, so its centred difficulties form no funnel."""
    row = {
        "id": "carpenter",
        "source": "Carpenter",
        "claim": "realNVP normalising flows with importance resampling, in JAX, fit a centred hierarchical "
        "IRT-2PL with ~1000 parameters that Stan's NUTS cannot fit well (funnels)",
        "hardware": "not stated",
        "differs": "this suite has no flow-based fit, and in its IRT-2PL every item is answered by every "
        "student, so its centred difficulties are pinned down by their data and form no funnel: "
        "the records only say whether NUTS fits that posterior on each side. What would measure the "
        "claim: a centred IRT-2PL with funnels (few answers per item), NUTS on it on both sides, and "
        "a realNVP + importance-resampling fit (flowjax) checked against the same reference",
        "verdict": f"{NOT_MEASURED} (no flow-based fit and no funnel-shaped IRT-2PL in the suite yet)",
    }
    irt = runs[(runs.model_id == claim_model("carpenter")) & runs.n_parameters.notna()]
    if irt.empty:
        return {**row, "measured": "no completed IRT-2PL run in these records"}
    largest = irt[irt.n_parameters == irt.n_parameters.max()]
    stan = largest[(largest.family == STAN) & ~largest.retired]
    jax = largest[largest.family == JAX]
    sides = [irt_side(label, group) for label, group in pd.concat([stan, jax]).groupby("label", sort=True)]
    return {
        **row,
        "measured": f"NUTS on the IRT-2PL, {int(largest.n_parameters.iloc[0]):,} "
        f"parameters at size {', '.join(sorted(set(largest['size'])))}: "
        + ("; ".join(sides) if sides else "no Stan-CPU or JAX run at that size"),
    }


def claim_rows(
    runs: pd.DataFrame, comparisons: list[dict], regime_maps: list[dict], measurements: list[dict]
) -> list[dict]:
    """Every seed claim, in the order of the project's brief."""
    campaign = runs[runs.study == ""]
    basis = maskell_basis(campaign, comparisons)
    rows = [maskell_row(basis, comparisons, *spec) for spec in MASKELL]
    rows += [
        tran_hoffman_row(runs),
        ingram_row(runs, regime_maps),
        rlouf_row(measurements),
        devices_row(measurements),
        irt_row(runs),
    ]
    return [{**row, "kind": verdict_class(row["verdict"])} for row in rows]
