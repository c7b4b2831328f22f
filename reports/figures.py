"""Figures as inline SVG (matplotlib, Agg): the report stays one self-contained file."""

from __future__ import annotations

import io

import matplotlib
from matplotlib import ticker
import numpy as np
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from runner import records  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9})

# Peak memory bandwidth (vendor data sheets) of the GPUs whose names nvidia-smi reports; the first match wins.
GPU_BANDWIDTH = [("H200", 4.8e12), ("H100 PCIe", 2.0e12), ("H100 NVL", 3.9e12), ("H100", 3.35e12),
                 ("A100-SXM4-80GB", 2.04e12), ("A100-PCIE-80GB", 1.94e12), ("A100", 1.56e12)]
ITEM_BYTES = {"float32": 4, "float64": 8}


def tick_formatter(suffix: str, minor: bool):
    """Plain numbers on log axes (10, 200, 0.5; with ``suffix``); minor ticks labelled at 2 and 5 only."""
    def label(value, _):
        if minor and f"{value:.1e}"[0] not in "25":
            return ""
        return f"{value:g}{suffix}"
    return ticker.FuncFormatter(label)


def log_axes(ax, x: bool = True, y: bool = True, suffix: str = "") -> None:
    """Log scale with plain, readable tick labels on the axes asked for."""
    for on, scale, axis, limits in ((x, ax.set_xscale, ax.xaxis, ax.get_xlim),
                                    (y, ax.set_yscale, ax.yaxis, ax.get_ylim)):
        if on:
            scale("log")
            low, high = limits()  # after the switch to log: the autoscaled, positive limits
            axis.set_major_formatter(tick_formatter(suffix, minor=False))
            # Minor labels (2, 5) only where the axis spans under two decades; wider ones have enough majors.
            axis.set_minor_formatter(tick_formatter(suffix, minor=True) if high < 100 * low
                                     else ticker.NullFormatter())


def log_log_pair(fig, xlabel: str, left_label: str, right_label: str, legend) -> str:
    """Finish a figure of two log-log panels sharing an x quantity; the legend on the panel given."""
    for ax, ylabel in zip(fig.axes, (left_label, right_label)):
        log_axes(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(which="both", alpha=0.3)
    legend.legend(fontsize="x-small")
    fig.tight_layout()
    return svg(fig)


def svg(fig) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def bar_chart_svg(summary: pd.DataFrame) -> str:
    """ESS/s per model and engine label (log scale), median over valid repeats."""
    pivot = summary[summary.repeats > 0].pivot_table(index="model_id", columns="label", values="ess_per_s")
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.6 * len(pivot)))
    height = 0.8 / max(len(pivot.columns), 1)
    positions = np.arange(len(pivot))
    for i, label in enumerate(pivot.columns):
        ax.barh(positions + i * height, pivot[label].to_numpy(), height=height, label=label)
    ax.set_yticks(positions + height * (len(pivot.columns) - 1) / 2, pivot.index)
    log_axes(ax, y=False)
    ax.set_xlabel("ESS/s (min bulk ESS ÷ warmup+sampling wall s; median over valid repeats)")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    return svg(fig)


def forest_svg(comparison: dict) -> str:
    """Per-model ratio with its 90 % interval, compile excluded (●) and included (□), and the geometric mean."""
    rows = [(m["model_id"], m["warm"], m["cold"]) for m in comparison["models"]]
    rows.append(("geometric mean", comparison["warm"], comparison["cold"]))
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.32 * len(rows)))
    y = np.arange(len(rows))
    for offset, index, marker, name in ((-0.12, 1, "o", "compile excluded"), (0.12, 2, "s", "compile included")):
        points = [(i, row[index]) for i, row in enumerate(rows) if row[index] is not None]
        if not points:
            continue
        ys = np.array([i for i, _ in points]) + offset
        values = np.array([r.value for _, r in points])
        # Clipped at 0: with one repeat the interval is the point itself, up to rounding.
        errors = np.maximum(np.array([[r.value - r.low for _, r in points], [r.high - r.value for _, r in points]]), 0)
        ax.errorbar(values, ys, xerr=errors, fmt=marker, capsize=2, label=name,
                    mfc="white" if marker == "s" else None)
    ax.axvline(1, color="grey", lw=0.8)
    ax.axhline(len(rows) - 1.5, color="grey", lw=0.5, ls=":")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    log_axes(ax, y=False, suffix="×")
    ax.set_xlabel(f"{comparison['numerator']} ESS/s ÷ {comparison['denominator']} ESS/s (90 % bootstrap interval)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    return svg(fig)


def bandwidth(machine_gpus: list[str]) -> float | None:
    for name, value in GPU_BANDWIDTH:
        if any(name in gpu for gpu in machine_gpus):
            return value
    return None


def data_size_svg(group: pd.DataFrame, features: int | None, gpus: list[str], crossovers: list[dict]) -> str:
    """One model on one machine: ESS/s vs N (``crossovers``, from :func:`reports.claims.crossovers`, marked) and
    ms per gradient vs N (with the GPU's memory-bandwidth roofline for a dense design of ``features`` columns,
    when the GPU is known)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    medians = group.groupby(["label", "n_rows"]).agg(ess_per_s=("ess_per_s", "median"),
                                                     ms=("ms_per_gradient", "median"),
                                                     device=("device", "first"),
                                                     precision=("precision", "first")).reset_index()
    for label, line in medians.groupby("label", sort=True):
        left.plot(line.n_rows, line.ess_per_s, marker="o", label=label)
        right.plot(line.n_rows, line.ms, marker="o", label=label)
    for c in crossovers:
        if c["n"] is not None:
            left.axvline(c["n"], ls="--", lw=0.8, color="grey")
            left.annotate(f"{c['label']} overtakes\n{c['stan_label']}: N≈{c['n']:,.0f}", (c["n"], left.get_ylim()[0]),
                          fontsize=7, xytext=(3, 5), textcoords="offset points")
    peak = bandwidth(gpus)
    if features and peak:
        for precision, rows in medians[medians.device == "gpu"].groupby("precision"):
            n = np.geomspace(rows.n_rows.min(), rows.n_rows.max(), 20)
            right.plot(n, 2 * n * features * ITEM_BYTES[precision] / peak * 1e3, ls=":", color="black",
                       label=f"roofline ({precision}: X read twice at {peak / 1e12:g} TB/s)")
    return log_log_pair(fig, "N (rows / matches)", "ESS/s", "ms per gradient", legend=right)


def chains_svg(runs: pd.DataFrame, rwmh: list[dict]) -> str:
    """Samples/s and ESS/s against the number of chains: NUTS/ChEES runs and random-walk Metropolis."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    for (label, machine), line in runs.sort_values("chains").groupby(["label", "machine"], sort=True):
        left.plot(line.chains, line.chains * line.draws / line.sampling_s, marker="o", label=f"{label} ({machine})")
        right.plot(line.chains, line.ess_per_s, marker="o", label=f"{label} ({machine})")
    table = pd.DataFrame([{**m, "line": f"RWMH {m['backend']}-{records.measurement_device(m).upper()} "
                           f"({records.measurement_machine(m).slug})"} for m in rwmh])
    if not table.empty:
        for line_label, line in table.sort_values("chains").groupby("line", sort=True):
            left.plot(line.chains, line.draws_per_s, marker="s", ls="--", label=line_label)
            right.plot(line.chains, line.ess_per_s, marker="s", ls="--", label=line_label)
    return log_log_pair(fig, "chains", "draws/s (all chains)", "ESS/s (min bulk)", legend=left)


def devices_svg(rows: list[dict]) -> str:
    """Speed-up of the sharded log density + gradient against the number of devices, with the ideal line."""
    table = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for model_id, line in table.sort_values("devices").groupby("model_id", sort=True):
        base = line[line.devices == line.devices.min()].ms_per_gradient.iloc[0]
        ax.plot(line.devices, base / line.ms_per_gradient, marker="o", label=model_id)
    n = np.array(sorted(table.devices.unique()))
    ax.plot(n, n / n.min(), ls=":", color="black", label="ideal")
    log_axes(ax)
    ax.set_xlabel(f"devices ({table.backend.iloc[0]})")
    ax.set_ylabel("speed-up over 1 device")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    return svg(fig)


def history_svg(group: pd.DataFrame) -> str:
    """One model over a history: median ESS/s and ms per gradient per campaign, a line per engine label."""
    medians = group.groupby(["label", "campaign_id"]).agg(
        created=("created", "min"), ess_per_s=("ess_per_s", "median"), ms=("ms_per_gradient", "median"),
    ).reset_index().sort_values("created")
    order = {c: i for i, c in enumerate(sorted(set(medians.campaign_id), key=dict(zip(medians.campaign_id,
                                                                                          medians.created)).get))}
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 2.8))
    for label, line in medians.groupby("label", sort=True):
        x = [order[c] for c in line.campaign_id]
        left.plot(x, line.ess_per_s, marker="o", label=label)
        right.plot(x, line.ms, marker="o", label=label)
    for ax, ylabel in ((left, "ESS/s (median)"), (right, "ms per gradient (median)")):
        log_axes(ax, x=False)
        ax.set_xticks(range(len(order)), [c[:15] for c in order], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(ylabel)
        ax.grid(which="both", alpha=0.3)
    left.legend(fontsize="x-small")
    fig.tight_layout()
    return svg(fig)
