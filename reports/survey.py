"""The per-gradient survey over posteriordb (``stanjax study survey``): each posterior's ms per log density +
gradient, one core, float64, in interleaved rounds, each side on both clocks
(:mod:`stanjax.runner.measure.gradient_clocks`: in a compiled loop, and inside its NUTS); JAX's speed-up per
gradient (Stan's ms ÷ JAX's, > 1: JAX faster) per posterior against its size, and their geometric mean with a bootstrap interval over the posteriors (as TuringLang's
DynamicPPL comparison reports its survey of posteriordb: how a posterior like these fares, not how one fares). A
speed-up pairs equal clocks only: the answer is the loop clock (the gradient alone, nothing of either sampler),
inside NUTS beside it. Records made before both sides were timed both ways (Stan inside its NUTS, JAX in a loop)
are shown as mixed clocks, only where a posterior has no equal pairing, and never pooled with one. Stan's program
as an expert writes it where the model has one (stan/expert/), else as published, is the answer; as published is
drawn beside it where the two differ."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports.figures import SMALLEST_PT, log_axes, plt, svg
from stanjax.reports.stats import BOOTSTRAP_SAMPLES, SEED, interval
from stanjax.runner.core import records
from stanjax.runner.measure.gradient_clocks import clock_of

# The pairings of clocks a speed-up is taken on, (Stan's, JAX's), the answer's first; "mixed": older records only.
PAIRINGS = {"loop": ("loop", "loop"), "nuts": ("nuts", "nuts"), "mixed": ("nuts", "loop")}
PAIRING_WORDS = {
    "loop": "both in a compiled loop",
    "nuts": "both inside their NUTS (sampler time ÷ leapfrog steps)",
    "mixed": "mixed clocks, Stan inside its NUTS and JAX in a compiled loop (older records: no equal-clock ratio)",
}
MARKERS = {"loop": "o", "nuts": "^", "mixed": "s"}


def table(measurements: list[dict]) -> pd.DataFrame:
    """Per machine, posterior and pairing of clocks (``clock``: a key of ``PAIRINGS``; "mixed" only where the
    posterior has no equal pairing on that machine): the median ms of each side over its rounds (``stan``,
    ``stan-expert`` where measured, ``jax``), the speed-ups (``speedup``: Stan as an expert writes it, else as
    published; ``published``), the rounds, and the posterior's unconstrained size (its parameters' elements)."""
    rows = pd.DataFrame(
        [
            {
                "machine": records.measurement_machine(m).label,
                "model_id": m["model_id"],
                "side": f"{m['side']}-expert" if m.get("program") == "expert" else m["side"],
                "clock": clock_of(m),
                "round": m.get("round"),
                "ms": m["ms_per_gradient"],
            }
            for m in measurements
            if m.get("study") == "survey" and m.get("measure") == "gradient_cost" and m["model_id"] in models.registry()
        ]
    )
    if rows.empty:
        return pd.DataFrame()
    frames: list[pd.DataFrame] = []
    for pairing, (stan_clock, jax_clock) in PAIRINGS.items():
        mine = rows[
            (rows.side == "jax") & (rows.clock == jax_clock) | (rows.side != "jax") & (rows.clock == stan_clock)
        ]
        frame = _pairing(mine)
        if pairing == "mixed" and frames and not frame.empty:
            equal = pd.concat(frames).set_index(["machine", "model_id"]).index
            frame = frame[~frame.set_index(["machine", "model_id"]).index.isin(equal)]
        if not frame.empty:
            frames.append(frame.assign(clock=pairing))
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    frame["parameters"] = [size_of(model_id) for model_id in frame.model_id]
    return frame


def _pairing(rows: pd.DataFrame) -> pd.DataFrame:
    """One pairing's part of ``table``: the sides' medians where both were measured, the speed-ups, the rounds."""
    if rows.empty:
        return pd.DataFrame()
    frame = rows.pivot_table(index=["machine", "model_id"], columns="side", values="ms", aggfunc="median")
    rounds = rows.groupby(["machine", "model_id"])["round"].nunique()
    if not {"stan", "jax"} <= set(frame.columns):
        return pd.DataFrame()
    frame = frame.dropna(subset=["stan", "jax"]).reset_index()
    if frame.empty:
        return frame
    frame["published"] = frame.stan / frame.jax  # Stan's program as posteriordb publishes it
    expert = frame["stan-expert"] if "stan-expert" in frame else pd.Series(np.nan, index=frame.index)
    frame["speedup"] = expert.fillna(frame.stan) / frame.jax  # as an expert writes it, where the model has one
    frame["rounds"] = [rounds[(m, i)] for m, i in zip(frame.machine, frame.model_id)]
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
    """The survey's figure (speed-up against size; a colour per machine, a marker per pairing of clocks) and its
    notes, a machine's first on its answer's pairing (the first of ``PAIRINGS`` it has) and its geometric mean the
    dashed line; None without a posterior measured on both sides."""
    frame = table(measurements)
    if frame.empty:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    notes = []
    for index, (machine, mine) in enumerate(frame.groupby("machine", sort=True)):
        color = f"C{index}"
        for pairing in [p for p in PAIRINGS if p in set(mine.clock)]:
            rows = mine[mine.clock == pairing]
            answer = pairing == next(p for p in PAIRINGS if p in set(mine.clock))
            notes.append(_note(machine, pairing, rows))
            ax.scatter(
                rows.parameters,
                rows.speedup,
                color=color,
                marker=MARKERS[pairing],
                label=f"{machine}: {len(rows)} posteriors, {PAIRING_WORDS[pairing]}",
            )
            if not answer:
                continue
            ax.axhline(geometric_mean(rows.speedup.to_numpy())[0], color=color, ls="--", lw=1)
            rewritten = rows[~np.isclose(rows.speedup, rows.published)]
            if len(rewritten):
                ax.scatter(
                    rewritten.parameters,
                    rewritten.published,
                    facecolors="none",
                    edgecolors=color,
                    marker=MARKERS[pairing],
                    label=f"{machine}: against Stan as published, where an expert's differs ({pairing} clock)",
                )
            for _, row in pd.concat([rows.nsmallest(2, "speedup"), rows.nlargest(2, "speedup")]).iterrows():
                ax.annotate(
                    row.model_id,
                    (row.parameters, row.speedup),
                    fontsize=SMALLEST_PT,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
    ax.axhline(1.0, color="black", lw=0.8)
    log_axes(ax, suffix="×")
    ax.set_xlabel("parameters (unconstrained elements)")
    ax.set_ylabel("Stan ms ÷ JAX ms per gradient, same clock")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=SMALLEST_PT)
    title = (
        "Per-gradient survey of posteriordb: JAX-CPU's speed-up over Stan per posterior (one core, float64), "
        "each side on the clock its marker says"
    )
    return {"title": title, "svg": svg(fig, title), "notes": notes}


def _note(machine: str, pairing: str, rows: pd.DataFrame) -> str:
    """A pairing's sentence: the geometric mean and its interval, the rounds, the programs, where JAX is slower."""
    value, low, high = geometric_mean(rows.speedup.to_numpy())
    published = geometric_mean(rows.published.to_numpy())
    experts = int(rows["stan-expert"].notna().sum()) if "stan-expert" in rows else 0
    slower = rows[rows.speedup < 1].sort_values("speedup")
    return (
        f"{machine}, {PAIRING_WORDS[pairing]}: JAX-CPU's gradient {value:.2f}× Stan's speed (geometric mean over "
        f"{len(rows)} posteriordb posteriors, 90 % bootstrap interval {low:.2f}–{high:.2f}; "
        f"{int(rows.rounds.min())}–{int(rows.rounds.max())} rounds each; Stan as an expert writes it for the "
        f"{experts} with such a program, else as published"
        + (
            f"; against Stan as published everywhere {published[0]:.2f}× ({published[1]:.2f}–{published[2]:.2f})"
            if experts
            else ""
        )
        + f"); slower than Stan on {len(slower)}"
        + (": " + ", ".join(f"{m} ({s:.2f}×)" for m, s in zip(slower.model_id, slower.speedup)) if len(slower) else "")
    )
