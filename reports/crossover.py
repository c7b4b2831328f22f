"""The first screen's figure: when is JAX on a CPU faster than Stan? Each model family a point (Ingram's crossover
figure is the model): x = the work of one gradient (Stan's ms per gradient, log), y = JAX-CPU ÷ Stan-CPU in ESS/s
with its interval, a second marker for the same ratio in time to 1,000 effective draws from a fresh process
(compile included), colour = regime. Read from the first screen's rows (``reports.answer.overview``): each
family's best-evidenced ratio, as the sentence above it counts them."""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from stanjax.reports.figures import ANSWER_TEXT_PT, ANSWER_WIDTH_IN, COLOURS, decade_limits, log_axes, plt, svg
from stanjax.reports.first_screen import counted_once
from stanjax.reports.regimes import MEASURED


def points(rows: list[dict], campaign: pd.DataFrame) -> list[dict]:
    """Per family with a ratio (each member's first entry, the best-evidenced): Stan's median ms per gradient over
    that ratio's valid Stan runs, the ESS/s ratio (a family's: its members' median, its bar from the lowest of
    their intervals to the highest), the time-to-1,000-ESS ratio (median), the regime, and whether a verdict
    stands (``MEASURED``: enough blocks)."""
    out = []
    for name, members in counted_once(rows):
        firsts = [r["entries"][0] for r in members if r["entries"]]
        work = [ms for e in firsts if np.isfinite(ms := stan_ms_per_gradient(e, campaign))]
        if not work:
            continue
        ratios = [e["ratio"] for e in firsts]
        to_result = [e["to_result"]["ratio"] for e in firsts if e["to_result"]["ratio"]]
        out.append(
            {
                "name": name,
                "members": len(firsts),
                "regime": members[0]["regime"],
                "ms_per_gradient": statistics.median(work),
                "ratio": statistics.median(r.value for r in ratios),
                "low": min(r.low for r in ratios),
                "high": max(r.high for r in ratios),
                "to_result": statistics.median(to_result) if to_result else None,
                "verdict": any(e["state"] == MEASURED for e in firsts),
            }
        )
    return sorted(out, key=lambda p: p["ms_per_gradient"])


def ratio_runs(entry: dict, campaign: pd.DataFrame, label: str) -> pd.DataFrame:
    """The valid runs of one side (``label``) behind one ratio of the first screen."""
    ids = [*entry["entry"]["run_ids"][0], *entry["entry"]["run_ids"][1]]
    return campaign[campaign.run_id.isin(ids) & (campaign.label == label) & campaign.valid]


def stan_ms_per_gradient(entry: dict, campaign: pd.DataFrame) -> float:
    """The median ms per gradient of the valid Stan runs behind one ratio (its denominator's)."""
    stan = ratio_runs(entry, campaign, entry["denominator"])
    return float(stan.ms_per_gradient.median()) if len(stan) else float("nan")


def crossover_svg(found: list[dict], numerator: str, denominator: str, title: str) -> str | None:
    """The figure of ``points``; None where no family has a ratio."""
    if not found:
        return None
    regimes = list(dict.fromkeys(p["regime"] for p in found))  # in the order of work per gradient
    colour = {regime: COLOURS[i % len(COLOURS)] for i, regime in enumerate(regimes)}
    fig, ax = plt.subplots(figsize=(ANSWER_WIDTH_IN, 4.2))
    for p in found:
        c, x = colour[p["regime"]], p["ms_per_gradient"]
        bar = [[max(p["ratio"] - p["low"], 0)], [max(p["high"] - p["ratio"], 0)]]
        ax.errorbar([x], [p["ratio"]], yerr=bar, fmt="o", ms=6, color=c, mfc=c if p["verdict"] else "white", lw=1)
        if p["to_result"]:
            ax.plot([x, x], [p["ratio"], p["to_result"]], color=c, lw=0.6, ls=":")
            ax.plot([x], [p["to_result"]], marker="D", ms=5, ls="none", mfc="white", mec=c)
    ax.axhline(1, color="grey", lw=0.8)
    values = [v for p in found for v in (p["low"], p["high"], p["to_result"]) if v]
    ax.set_ylim(*decade_limits(values))
    works = [p["ms_per_gradient"] for p in found]
    low, high = 10 ** np.floor(np.log10(min(works))), 10 ** np.ceil(np.log10(max(works)))
    ax.set_xlim(low, max(high, 10 * low))
    log_axes(ax, suffix="")
    ax.set_xlabel(f"work per gradient: {denominator}'s ms per gradient (log)", fontsize=ANSWER_TEXT_PT)
    ax.set_ylabel(f"{numerator} ÷ {denominator} (log; above 1: {numerator} faster)", fontsize=ANSWER_TEXT_PT)
    ax.tick_params(labelsize=ANSWER_TEXT_PT)
    ax.grid(which="major", alpha=0.3)
    handles = [
        Line2D([], [], marker="o", ls="none", color="black", label="ESS/s, compile excluded, 90 % interval"),
        Line2D([], [], marker="o", ls="none", color="black", mfc="white", label="ESS/s, too few blocks: no verdict"),
        Line2D([], [], marker="D", ls="none", mec="black", mfc="white", label="time to 1,000 ESS, compile included"),
        *(Line2D([], [], marker="o", ls="none", color=colour[r], label=r) for r in regimes),
    ]
    return svg(fig, title, legend_below=handles, legend_size=ANSWER_TEXT_PT)
