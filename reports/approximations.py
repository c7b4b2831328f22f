"""Approximate inference against exact sampling, on one axis: when is a fitted approximation (a flow, ADVI,
Pathfinder) worth its error, against NUTS run to convergence?

For each posterior and size where an approximate engine ran, every clean run there (approximations and samplers
alike) becomes a point: its error against the reference, the largest |mean - reference mean| and |sd - reference
sd| over the parameters in reference sds (``runner.measure.validity.accuracy``, the same measure for every engine), against
its wall time from data to draws (fitting or warmup included, compile excluded). An approximation counts as fitted
when its importance weights' Pareto k-hat is below 0.7; a sampler's run when it passed its gates. Carpenter's claim
is judged here, as he made it: does a RealNVP flow with importance resampling fit the centred IRT-2PL, and does
Stan's NUTS fail there?
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports.claim_verdicts import (
    INCONCLUSIVE,
    INSUFFICIENT,
    NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    claim_model,
)
from stanjax.reports.figures import SMALLEST_PT, log_axes, svg
from stanjax.reports.numbers import count, number
from stanjax.runner.core.engine_registry import STAN
from stanjax.runner.measure import references, validity

CARPENTER_FLOW = "flow_realnvp"
MEANFIELD = "advi_meanfield"  # the narrowest fit beside it: a flow that ends below its ELBO diverged in training
CLAIMED_PARAMETERS = 1_000


def accuracy_points(runs: pd.DataFrame, all_records: list) -> pd.DataFrame:
    """One row per clean, completed run of a (model, size) some approximate engine ran, outside studies: the run's
    ``runs`` row (label, machine, validity) with its errors against the reference in reference sds
    (``mean_error``, ``sd_error``; NaN without a reference), its k-hat (approximations only) and ``fitted``."""
    ok = runs[(runs.status == "ok") & (runs.study == "") & (runs.left_out == "")]
    places = set(zip(ok[ok.approximate].model_id, ok[ok.approximate]["size"]))
    chosen = ok[pd.Series([place in places for place in zip(ok.model_id, ok["size"])], index=ok.index, dtype=bool)]
    if chosen.empty:
        return chosen.assign(mean_error=[], sd_error=[], khat=[], final_loss=[], fitted=[])
    by_id = {r.run_id: r for r in all_records}
    errors = []
    for run_id in chosen.run_id:
        record = by_id[run_id]
        reference, why = references.applicable(record.model_id, record.size, record.config.resize, record.data_hash)
        accuracy = validity.accuracy(record.metrics, reference, why)
        errors.append(
            {
                "mean_error": accuracy.get("max_mean_error", float("nan")),
                "sd_error": accuracy.get("max_sd_error", float("nan")),
                "khat": record.gates.get("khat", {}).get("khat", float("nan")),
                "final_loss": record.engine_info.get("final_loss", float("nan")),  # negative ELBO, fits only
            }
        )
    return chosen.reset_index(drop=True).join(pd.DataFrame(errors)).assign(fitted=lambda f: f.valid)


def accuracy_svg(group: pd.DataFrame, colours: dict, title: str) -> str:
    """Error in reference sds (left: means, right: sds) against wall seconds, log-log; a point per run, filled where
    the run fitted (k-hat < 0.7, or a sampler's gates passed), hollow where not."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    for label, points in group.groupby("label", sort=True):
        for ax, column in ((left, "mean_error"), (right, "sd_error")):
            for i, (fitted, subset) in enumerate(points.groupby("fitted")):
                ax.scatter(
                    subset.user_s,
                    subset[column],
                    label=label if i == 0 else None,  # once per engine, fitted or not
                    marker="o" if not subset.approximate.iloc[0] else "s",
                    facecolors=colours[label] if fitted else "none",
                    edgecolors=colours[label],
                )
    for ax, column, ylabel in (
        (left, "mean_error", "largest mean error (reference sds)"),
        (right, "sd_error", "largest sd error (reference sds)"),
    ):
        if (group[column] > 0).any():
            log_axes(ax)
        else:  # records before schema 5 kept no sds
            ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("wall seconds, data to draws (compile excluded)")
        ax.set_ylabel(ylabel)
        ax.grid(which="both", alpha=0.3)
    left.legend(fontsize=SMALLEST_PT)
    return svg(fig, title)


def figures(points: pd.DataFrame, colours: dict) -> list[dict]:
    """A figure per (machine, model, size) with approximate runs, with the rows it shows and its anchor on the
    figures page (the figures stay off ``index.html``, which must open at once)."""
    return [
        {
            "title": f"{model_id} ({size}) on {machine}",
            "anchor": f"accuracy-{machine}-{model_id}-{size}",
            "svg": accuracy_svg(group, colours, f"Accuracy against time: {model_id} ({size}), {machine}"),
            "rows": summary_rows(group),
        }
        for (machine, model_id, size), group in points.groupby(["machine", "model_id", "size"], sort=True)
    ]


def summary_rows(group: pd.DataFrame) -> list[dict]:
    """Per engine label: runs, runs fitted, median wall seconds, median errors and k-hat."""
    rows = []
    for label, runs in group.groupby("label", sort=True):
        rows.append(
            {
                "label": label,
                "approximate": bool(runs.approximate.iloc[0]),
                "runs": len(runs),
                "fitted": int(runs.fitted.sum()),
                "user_s": runs.user_s.median(),
                "mean_error": runs.mean_error.median(),
                "sd_error": runs.sd_error.median(),
                "khat": runs.khat.median() if runs.approximate.iloc[0] else None,
            }
        )
    return rows


def training_broke_down(flow: pd.DataFrame, meanfield: pd.DataFrame) -> pd.Series:
    """Per flow run: did its training fail as optimisation, saying nothing of what a flow can fit? Its loss over
    its last steps was never finite (every step's ELBO draws reached an undefined density), or it ended above the
    median final loss of mean-field ADVI's runs on the same posterior: a RealNVP flow on a normal base holds every
    mean-field normal, so an ELBO below theirs is a training that diverged, not a family too narrow."""
    losses = flow.final_loss.astype(float)
    ceiling = meanfield.final_loss.astype(float).median() if len(meanfield) else math.inf
    return ~np.isfinite(losses) | (losses > ceiling)


def carpenter_row(points: pd.DataFrame, runs: pd.DataFrame | None = None) -> dict:
    """Carpenter's claim as he made it: on the centred IRT-2PL (the model claiming it), at its largest size run, does
    the RealNVP flow with importance resampling fit (k-hat < 0.7) and Stan's NUTS fail (a gate failed)? Reproduced
    when the flow fitted in most of its runs and Stan failed in most of its; not reproduced when the flow failed in
    most or Stan fitted in most; inconclusive when the runs split; insufficient data on tiny data; a size short of
    the claim's ~1000 parameters is named in the verdict. With ``runs`` (the tidy runs), the measured text adds how
    NUTS did on the model's non-centred twin at that size (the same posterior: is the failure the funnel's?)."""
    row = {
        "id": "carpenter",
        "source": "Carpenter",
        "claim": "realNVP normalising flows trained in JAX, followed by importance resampling, fit a hierarchical "
        "IRT-2PL with ~1000 parameters that Stan's NUTS cannot fit well (funnels)",
        "hardware": "not stated",
        "differs": "the posterior: a centred IRT-2PL whose items have few answers each, so their parameters meet "
        "a funnel; the flow: flowjax's RealNVP (8 affine coupling layers) trained by ELBO, then Pareto-smoothed "
        "importance resampling; fitted means k-hat < 0.7",
    }
    model_id = claim_model("carpenter")
    if model_id is None:
        return {
            **row,
            "measured": "no centred IRT-2PL with funnels in the suite's registry yet",
            "verdict": f"{NOT_MEASURED} (no model for it yet)",
        }
    irt = points[points.model_id == model_id]
    flow = irt[irt.engine == CARPENTER_FLOW]
    stan = irt[(irt.family == STAN) & ~irt.retired & ~irt.approximate]  # Stan's NUTS, not its ADVI or Pathfinder
    if flow.empty or stan.empty:
        missing = " and ".join(name for name, runs in (("no flow run", flow), ("no Stan NUTS run", stan)) if runs.empty)
        return {**row, "measured": f"{missing} on the centred IRT-2PL in these records", "verdict": NOT_MEASURED}
    size = max(set(flow["size"]) & set(stan["size"]) or {""}, key=lambda s: irt[irt["size"] == s].n_parameters.max())
    if not size:
        return {**row, "measured": "the flow and Stan ran at different sizes", "verdict": NOT_MEASURED}
    flow, stan = flow[flow["size"] == size], stan[stan["size"] == size]
    flow_fits, stan_fits = 2 * flow.fitted.sum() > len(flow), 2 * stan.fitted.sum() > len(stan)
    flow_fails, stan_fails = 2 * (~flow.fitted).sum() > len(flow), 2 * (~stan.fitted).sum() > len(stan)
    parameters = int(irt[irt["size"] == size].n_parameters.max())
    broke_down = int(training_broke_down(flow, irt[(irt.engine == MEANFIELD) & (irt["size"] == size)]).sum())
    if size == "tiny":
        verdict = f"{INSUFFICIENT} (measured on tiny data, {parameters:,} parameters)"
    elif 2 * broke_down > len(flow):
        verdict = (
            f"{INCONCLUSIVE} (the flow's training broke down in {count(broke_down)} of {count(len(flow))} runs: its "
            "final ELBO not finite, or below mean-field ADVI's on the same posterior)"
        )
    elif flow_fits and stan_fails:
        verdict = REPRODUCED
    elif flow_fails or stan_fits:
        verdict = NOT_REPRODUCED
    else:
        verdict = f"{INCONCLUSIVE} (the runs split)"
    if size != "tiny" and parameters < CLAIMED_PARAMETERS / 2:
        verdict += f" at size {size} ({parameters:,} parameters; the claim is about ~{CLAIMED_PARAMETERS:,})"
    return {
        **row,
        "measured": f"at size {size} ({parameters:,} parameters): the flow fitted in {count(flow.fitted.sum())} "
        f"of {count(len(flow))} runs (median k-hat {number(flow.khat.median())}, largest mean error "
        f"{number(flow.mean_error.median())} reference sds, {number(flow.user_s.median())} s with training); "
        f"Stan's NUTS passed its gates in {count(stan.fitted.sum())} of {count(len(stan))} "
        f"(gates failed: {', '.join(sorted(set(', '.join(stan.failed_gates).split(', ')) - {''})) or 'none'}; "
        f"median {count(stan.divergences.median())} divergences, largest mean error "
        f"{number(stan.mean_error.median())} reference sds, {number(stan.user_s.median())} s)"
        + twin_nuts(runs, model_id, size),
        "verdict": verdict,
    }


NUTS_ENGINES = ("stan", "numpyro", "blackjax_nuts")


def twin_nuts(runs: pd.DataFrame | None, model_id: str, size: str) -> str:
    """ "; on its non-centred twin ... NUTS passed its gates in k of n runs (per engine label)", from the twin's
    clean campaign runs at ``size``; empty where the model has no twin or the twin no such run."""
    twin = models.get(model_id).reference_twin
    if runs is None or not twin:
        return ""
    found = runs[
        (runs.model_id == twin)
        & (runs["size"] == size)
        & (runs.study == "")
        & (runs.superseded == "")
        & ~runs.retired
        & runs.engine.isin(NUTS_ENGINES)
    ]
    if found.empty:
        return ""
    per_label = ", ".join(
        f"{label} {count(group.valid.sum())} of {count(len(group))} at {count(draws)} draws a chain"
        for (label, draws), group in found.groupby(["label", "draws"], sort=True)
    )
    return (
        f"; on its non-centred twin (the same posterior, reparameterised) NUTS passed its gates in "
        f"{count(found.valid.sum())} of {count(len(found))} runs ({per_label})"
    )
