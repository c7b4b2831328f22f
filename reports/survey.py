"""The per-gradient survey over posteriordb (``stanjax study survey``): each posterior's ms per log density +
gradient, Stan's inside its NUTS and JAX's jitted, one core, float64, in interleaved rounds; JAX's speed-up per
gradient (Stan's ms ÷ JAX's, > 1: JAX faster) per posterior against its size, and their geometric mean with a
bootstrap interval over the posteriors (as TuringLang's DynamicPPL comparison reports its survey of posteriordb:
how a posterior like these fares, not how one fares). Stan's program as an expert writes it where the model has one
(stan/expert/), else as published, is the answer; as published is drawn beside it where the two differ."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports.figures import log_axes, plt, svg
from stanjax.reports.stats import BOOTSTRAP_SAMPLES, SEED, interval
from stanjax.runner.core import records


def table(measurements: list[dict]) -> pd.DataFrame:
    """Per machine and posterior: the median ms of each side over its rounds (``stan``, ``stan-expert`` where
    measured, ``jax``), the speed-ups (``speedup``: Stan as an expert writes it, else as published; ``published``),
    the rounds, and the posterior's unconstrained size (its parameters' elements)."""
    rows = [
        {
            "machine": records.measurement_machine(m).label,
            "model_id": m["model_id"],
            "side": f"{m['side']}-expert" if m.get("program") == "expert" else m["side"],
            "round": m.get("round"),
            "ms": m["ms_per_gradient"],
        }
        for m in measurements
        if m.get("study") == "survey" and m.get("measure") == "gradient_cost" and m["model_id"] in models.registry()
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows).pivot_table(index=["machine", "model_id"], columns="side", values="ms", aggfunc="median")
    rounds = pd.DataFrame(rows).groupby(["machine", "model_id"])["round"].nunique()
    frame = frame.dropna(subset=[side for side in ("stan", "jax") if side in frame]).reset_index()
    if not {"stan", "jax"} <= set(frame.columns) or frame.empty:
        return pd.DataFrame()
    frame["published"] = frame.stan / frame.jax  # Stan's program as posteriordb publishes it
    expert = frame["stan-expert"] if "stan-expert" in frame else pd.Series(np.nan, index=frame.index)
    frame["speedup"] = expert.fillna(frame.stan) / frame.jax  # as an expert writes it, where the model has one
    frame["rounds"] = [rounds[(m, i)] for m, i in zip(frame.machine, frame.model_id)]
    frame["parameters"] = [size_of(model_id) for model_id in frame.model_id]
    return frame


def size_of(model_id: str) -> int:
    spec = models.get(model_id)
    data = spec.data("default", seed=1)
    return int(sum(np.prod(p.resolve_shape(data), dtype=int) for p in spec.parameters))


def geometric_mean(speedups: np.ndarray, seed: int = SEED) -> tuple[float, float, float]:
    """The geometric mean of the posteriors' speed-ups and its percentile-bootstrap interval, the posteriors
    resampled with replacement (fixed seed: the same records give the same interval)."""
    logs = np.log(speedups)
    draws = logs[np.random.default_rng(seed).integers(0, len(logs), size=(BOOTSTRAP_SAMPLES, len(logs)))]
    return (float(np.exp(logs.mean())), *interval(np.exp(draws.mean(axis=1))))


def figure(measurements: list[dict]) -> dict | None:
    """The survey's figure (speed-up against size, a panel's points per machine) and its notes; None without a
    posterior measured on both sides."""
    frame = table(measurements)
    if frame.empty:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    notes = []
    for index, (machine, rows) in enumerate(frame.groupby("machine", sort=True)):
        value, low, high = geometric_mean(rows.speedup.to_numpy())
        published = geometric_mean(rows.published.to_numpy())
        color = f"C{index}"
        ax.scatter(rows.parameters, rows.speedup, color=color, label=f"{machine}: {len(rows)} posteriors")
        ax.axhline(value, color=color, ls="--", lw=1)
        rewritten = rows[~np.isclose(rows.speedup, rows.published)]
        experts = int(rows["stan-expert"].notna().sum()) if "stan-expert" in rows else 0
        if len(rewritten):
            ax.scatter(
                rewritten.parameters,
                rewritten.published,
                facecolors="none",
                edgecolors=color,
                label=f"{machine}: against Stan as published, where an expert's differs",
            )
        slower = rows[rows.speedup < 1].sort_values("speedup")
        notes.append(
            f"{machine}: JAX-CPU's gradient {value:.2f}× Stan's speed (geometric mean over {len(rows)} posteriordb "
            f"posteriors, 90 % bootstrap interval {low:.2f}–{high:.2f}; {int(rows.rounds.min())}–"
            f"{int(rows.rounds.max())} rounds each; Stan as an expert writes it for the {experts} with such a "
            f"program, else as published"
            + (
                f"; against Stan as published everywhere {published[0]:.2f}× ({published[1]:.2f}–{published[2]:.2f})"
                if experts
                else ""
            )
            + f"); slower than Stan on {len(slower)}"
            + (
                ": " + ", ".join(f"{m} ({s:.2f}×)" for m, s in zip(slower.model_id, slower.speedup))
                if len(slower)
                else ""
            )
        )
        for _, row in pd.concat([rows.nsmallest(2, "speedup"), rows.nlargest(2, "speedup")]).iterrows():
            ax.annotate(
                row.model_id, (row.parameters, row.speedup), fontsize=8, xytext=(3, 3), textcoords="offset points"
            )
    ax.axhline(1.0, color="black", lw=0.8)
    log_axes(ax, suffix="×")
    ax.set_xlabel("parameters (unconstrained elements)")
    ax.set_ylabel("Stan ms ÷ JAX ms per gradient")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize="small")
    title = "Per-gradient survey of posteriordb: JAX-CPU's speed-up over Stan per posterior (one core, float64)"
    return {"title": title, "svg": svg(fig, title), "notes": notes}
