"""The published claims this suite exists to test, each judged as its authors made it: one row each, with what the
records measured and a verdict (``reports.claim_verdicts``). Here the claims read from campaigns' paired blocks
(Maskell's ratios, Tran & Hoffman's leapfrog step), and the table in the order of the project's brief; the claims
read from the scaling studies are in ``reports.study_claims``, Carpenter's (flows against NUTS) in
``reports.approximations``.

Ratio claims are judged per model and per regime; a mean over models is secondary and names its models. Only runs
an answer may use reach this module (clean, not superseded: ``headline.answerable``).
"""

from __future__ import annotations

import pandas as pd

from stanjax.reports.approximations import carpenter_row
from stanjax.reports.claim_verdicts import (
    DEPENDS,
    INSUFFICIENT,
    NOT_MEASURED,
    TOLERANCE,
    VERDICTS,
    claim_model,
    head,
    ratio_verdict,
    shown,
    verdict_class,
)
from stanjax.reports.headline import is_jax, is_stan, paired_blocks
from stanjax.reports.numbers import count, number, span, times
from stanjax.reports.regimes import find, geometric_mean, regime_name, regime_of, side
from stanjax.reports.stats import block_ratios_with_geomean
from stanjax.reports.study_claims import devices_row, ingram_row, rlouf_row
from stanjax.runner.core.engine_registry import JAX, STAN

COVTYPE_ROWS = 500_000  # "covertype size": the large preset has 581,012 rows


# Maskell's three ratios compare three kinds of setup; all three are judged on one basis (machine, size, models)
# where one machine ran them all; a row whose two kinds that basis lacks gets its own (a GPU box whose Stan failed).
KINDS = {"JAX-GPU": is_jax("gpu"), "JAX-CPU": is_jax("cpu"), "Stan-CPU": is_stan}
MASKELL = (
    ("maskell-gpu-stan", "JAX-GPU", "Stan-CPU", 5.0),
    ("maskell-gpu-cpu", "JAX-GPU", "JAX-CPU", 20.0),
    ("maskell-stan-cpu", "Stan-CPU", "JAX-CPU", 4.0),
)


def maskell_basis(
    campaign: pd.DataFrame, comparisons: list[dict], kinds: tuple[str, ...] = tuple(KINDS)
) -> dict | None:
    """The machine and size where most of ``kinds`` (Maskell's, by default) ran validly, their preferred labels
    there, and the models every pair of them has a ratio for (the rest named, with why): one basis for the rows."""
    best = None
    for (machine, size), here in campaign.groupby(["machine", "size"], sort=True):
        ok = here[here.valid]
        labels = {kind: label for kind in kinds if (label := side(ok, KINDS[kind])[0]) is not None}
        if len(labels) < 2:
            continue
        pairs = [(a, b) for a in labels.values() for b in labels.values() if a < b]
        common = sorted(
            m
            for m in set(ok.model_id)
            if all(find(comparisons, machine, size, a, b, m)[0] is not None for a, b in pairs)
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


def maskell_row(
    basis: dict | None, comparisons: list[dict], key: str, num: str, den: str, claimed: float, shared: str = ""
) -> dict:
    """One of Maskell's rows on ``basis``; ``shared``: empty where it is the three rows' common basis, else why
    the row has its own."""
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
        entry, ratio, flipped = find(comparisons, basis["machine"], basis["size"], first, second, model_id)
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
        regimes.setdefault(regime_name(regime_of(c["model_id"])), []).append(c)
    by_regime = {name: (*regime_verdict(members, claimed, basis["size"]), members) for name, members in regimes.items()}
    heads = {head(v) for v, _, _ in by_regime.values()}
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
        for name, (v, evidence, _) in by_regime.items():
            groups.setdefault(head(v), []).append(f"{name}{f' ({evidence})' if evidence else ''}")
        verdict = f"{DEPENDS}: " + "; ".join(
            f"{h} for {', '.join(names)}"
            for h, names in sorted(
                groups.items(), key=lambda item: VERDICTS.index(item[0]) if item[0] in VERDICTS else len(VERDICTS)
            )
        )
    regime_text = "; ".join(
        f"{name} ({len(members)} models, geometric mean {shown(geometric_mean(members)['ratio'])}): {head(v)}"
        + (f", from its models' own blocks ({evidence})" if evidence else "")
        for name, (v, evidence, members) in by_regime.items()
        if len(members) > 1
    )
    geo = geometric_mean(cells)["ratio"] if len(cells) > 1 else None
    measured = (
        f"On {basis['machine']} at size {basis['size']}, "
        + (f"this row's own basis ({shared}): " if shared else "the basis of all three Maskell rows: ")
        + f"the models where {', '.join(basis['labels'].values())} all ran validly"
        + (f" (left out: {'; '.join(basis['left_out'])})" if basis["left_out"] else "")
        + f". {first} ÷ {second} in ESS/s per model (band "
        f"{span(claimed / TOLERANCE, claimed * TOLERANCE)}): {per_model}."
        + (f" Per regime: {regime_text}." if regime_text else "")
        + (f" Secondary: geometric mean over these {len(cells)} models {shown(geo)}." if geo else "")
    )
    return {**row, "measured": measured, "verdict": verdict}


def regime_verdict(members: list[dict], claimed: float, size: str) -> tuple[str, str]:
    """A regime's verdict and the models it rests on: its geometric mean's where that has the blocks for one; else
    its models' own verdicts where some have them (one model's 5 blocks are a finding, not "insufficient data"
    because its neighbour has 2), "depends on the regime" if they differ; else the mean's "insufficient data"."""
    ratio = members[0]["ratio"] if len(members) == 1 else geometric_mean(members)["ratio"]
    mean = ratio_verdict(ratio, claimed, size)
    decided = [c for c in members if head(c["verdict"]) not in (INSUFFICIENT, NOT_MEASURED)]
    if len(members) == 1 or head(mean) != INSUFFICIENT or not decided:
        return mean, ""
    evidence = ", ".join(f"{c['model_id']} {shown(c['ratio'])}" for c in decided)
    if len(decided) < len(members):
        evidence += f"; {count(len(members) - len(decided))} other model(s) with too few blocks"
    heads = {head(c["verdict"]) for c in decided}
    return (heads.pop() if len(heads) == 1 else DEPENDS), evidence


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


def claim_rows(
    runs: pd.DataFrame,
    comparisons: list[dict],
    regime_maps: list[dict],
    measurements: list[dict],
    accuracy_points: pd.DataFrame,
) -> list[dict]:
    """Every seed claim, in the order of the project's brief (Carpenter's from the approximations' accuracy
    points: ``reports.approximations``)."""
    campaign = runs[runs.study == ""]
    basis = maskell_basis(campaign, comparisons)
    rows = []
    for key, num, den, claimed in MASKELL:
        if basis is None or {num, den} <= set(basis["labels"]):
            rows.append(maskell_row(basis, comparisons, key, num, den, claimed))
            continue
        missing = " and ".join(kind for kind in (num, den) if kind not in basis["labels"])
        why = f"the other rows' basis, {basis['machine']} at size {basis['size']}, has no valid {missing} run"
        own = maskell_basis(campaign, comparisons, (num, den))
        rows.append(maskell_row(own or basis, comparisons, key, num, den, claimed, why if own else ""))
    rows += [
        tran_hoffman_row(runs),
        ingram_row(runs, regime_maps),
        rlouf_row(measurements),
        devices_row(measurements),
        carpenter_row(accuracy_points, runs),
    ]
    return [{**row, "kind": verdict_class(row["verdict"])} for row in rows]
