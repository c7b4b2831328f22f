"""The scaling studies' figures, for the figures page: ESS/s and ms per gradient along the data-size study's N (with
the crossovers the Ingram claim reads and the GPU's memory-bandwidth roofline), draws/s and ESS/s against the
number of chains (NUTS, and random-walk Metropolis in JAX and NumPy), and the sharded gradient's speed-up against
devices. Drawn as ``reports.figures`` draws (inline SVG, titled, one colour per engine label); every run is drawn,
invalid and failed ones marked (``mark_invalid_and_failed``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from stanjax.reports import headline, numbers, study_claims, survey
from stanjax.reports.figures import (  # pyplot as figures.py set it up: the Agg backend, text drawn as written
    MACHINE_MARKERS,
    SMALLEST_PT,
    log_axes,
    log_log_pair,
    plt,
    samplers,
    svg,
)
from stanjax.runner.core import records

# Peak memory bandwidth (vendor data sheets) of the GPUs whose names nvidia-smi reports; the first match wins.
GPU_BANDWIDTH = [
    ("H200", 4.8e12),
    ("H100 PCIe", 2.0e12),
    ("H100 NVL", 3.9e12),
    ("H100", 3.35e12),
    ("A100-SXM4-80GB", 2.04e12),
    ("A100-PCIE-80GB", 1.94e12),
    ("A100", 1.56e12),
]
ITEM_BYTES = {"float32": 4, "float64": 8}
INVALID_MARKER, FAILED_MARKER = "x", "v"


def study_figures(runs: pd.DataFrame, measurements: list[dict], colours: dict) -> list[dict]:
    """The scaling plots for each study present in the records, every run drawn (invalid and failed ones
    marked)."""
    out = []
    usable = runs[headline.answerable(runs)]  # the crossovers the claims read, from the runs an answer may use
    sized = runs[runs.study == "data-size"]
    for (machine, model_id), group in sized.groupby(["machine", "model_id"], sort=True):
        features = group.features.dropna()
        gpus = group.gpus.iloc[0]
        found = [c for c in study_claims.crossovers(usable, model_id) if c["machine"] == machine]
        title = f"Data size: {model_id} on {machine}, {samplers(group.engine.unique())}"
        out.append(
            {
                "title": title,
                "svg": data_size_svg(
                    group, int(features.iloc[0]) + 1 if len(features) else None, gpus, found, colours, title
                ),
                "notes": [f"{c['label']} vs {c['stan_label']}: {c['text']}" for c in found]
                + (
                    []
                    if bandwidth(gpus)
                    else [
                        "no memory-bandwidth roofline: the device's bandwidth "
                        "is not known (CPU, or a GPU not in the table)"
                    ]
                ),
            }
        )
    chains = runs[runs.study == "chains"]
    for (model_id, size), group in chains.groupby(["model_id", "size"], sort=True):
        title = (
            f"Chains: {model_id} ({size}), {samplers(group.engine.unique())}: draws/s and ESS/s "
            "against the number of chains"
        )
        out.append({"title": title, "notes": [], "svg": chains_svg(group, colours, title)})
    rwmh = [m for m in measurements if m.get("measure") == "rwmh"]
    if rwmh:
        out.append(
            {
                "title": "Chains: random-walk Metropolis on rlouf's 1-D Gaussian mixture, JAX vs NumPy",
                "notes": [],
                "svg": rwmh_svg(rwmh, colours),
            }
        )
    sharded = [m for m in measurements if m.get("measure") == "sharded_gradient"]
    if sharded:
        out.append(
            {
                "title": "Devices: sharded log density + gradient",
                "svg": devices_svg(sharded),
                "notes": [
                    f"{model_id}, ms per gradient on 1, 2, ... {sharded[0]['backend']} devices: "
                    + ", ".join(
                        f"{m['devices']}: {numbers.number(m['ms_per_gradient'])}"
                        for m in sharded
                        if m["model_id"] == model_id
                    )
                    for model_id in sorted({m["model_id"] for m in sharded})
                ],
            }
        )
    return out + [found for found in [survey.figure(measurements)] if found]


def bandwidth(machine_gpus: list[str]) -> float | None:
    for name, value in GPU_BANDWIDTH:
        if any(name in gpu for gpu in machine_gpus):
            return value
    return None


def mark_invalid_and_failed(axes_columns, runs: pd.DataFrame, x: str, colours: dict) -> list:
    """Draw each invalid run at its own values (×) and each failed run (no values: a crash or timeout) at its x on
    the axis' floor (▼), in its label's colour; the legend entries that explain the marks."""
    invalid = runs[~runs.valid & (runs.status == "ok")]
    failed = runs[(runs.status != "ok") & runs[x].notna()]
    for ax, column in axes_columns:
        for row in invalid.itertuples():
            ax.plot(getattr(row, x), getattr(row, column), INVALID_MARKER, color=colours[row.label], ms=7, mew=1.5)
        for row in failed.itertuples():
            ax.plot(
                getattr(row, x),
                0.02,
                FAILED_MARKER,
                color=colours[row.label],
                ms=7,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
            )
    return [
        Line2D([], [], ls="", marker=m, color="grey", label=text)
        for m, text, frame in (
            (INVALID_MARKER, "invalid run (failed a gate)", invalid),
            (FAILED_MARKER, "failed run (crash or timeout)", failed),
        )
        if len(frame)
    ]


def data_size_svg(
    group: pd.DataFrame, features: int | None, gpus: list[str], crossovers: list[dict], colours: dict, title: str
) -> str:
    """One model on one machine, every run of the study: ESS/s vs N (``crossovers``, from
    :func:`stanjax.reports.study_claims.crossovers`, marked) and ms per gradient vs N (with the GPU's
    memory-bandwidth roofline for a dense design of ``features`` columns, when the GPU is known); medians of valid
    runs joined by lines, invalid and failed runs marked."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
    ok = group[group.valid]
    medians = (
        ok.groupby(["label", "n_rows"])
        .agg(
            ess_per_s=("ess_per_s", "median"),
            ms=("ms_per_gradient", "median"),
            device=("device", "first"),
            precision=("precision", "first"),
        )
        .reset_index()
    )
    for label, line in medians.groupby("label", sort=True):
        left.plot(line.n_rows, line.ess_per_s, marker="o", label=label, color=colours[label])
        right.plot(line.n_rows, line.ms, marker="o", label=label, color=colours[label])
    marks = mark_invalid_and_failed(((left, "ess_per_s"), (right, "ms_per_gradient")), group, "n_rows", colours)
    for c in crossovers:
        if c["n"] is not None:
            left.axvline(c["n"], ls="--", lw=0.8, color="grey")
            left.annotate(
                f"{c['label']} overtakes\n{c['stan_label']}: N≈{c['n']:,.0f}",
                (c["n"], 0),
                xycoords=("data", "axes fraction"),
                fontsize=SMALLEST_PT,
                xytext=(3, 5),
                textcoords="offset points",
            )
    peak = bandwidth(gpus)
    if features and peak:
        for precision, rows in medians[medians.device == "gpu"].groupby("precision"):
            n = np.geomspace(rows.n_rows.min(), rows.n_rows.max(), 20)
            right.plot(
                n,
                2 * n * features * ITEM_BYTES[precision] / peak * 1e3,
                ls=":",
                color="black",
                label=f"roofline ({precision}: X read twice at {peak / 1e12:g} TB/s)",
            )
    for label in sorted(set(group.label) - set(medians.label)):  # labels with no valid run still get a key
        right.plot([], [], marker="o", color=colours[label], label=f"{label} (no valid run)")
    for handle in marks:
        right.add_line(handle)
    return log_log_pair(fig, "N (rows / matches)", "ESS/s", "ms per gradient", legend=right, title=title)


def chains_svg(runs: pd.DataFrame, colours: dict, title: str) -> str:
    """One model's chains study: draws/s (all chains) and ESS/s against the number of chains, a line per engine
    label (a marker per machine) through the valid runs, invalid and failed runs marked."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    machines = sorted(runs.machine.unique())
    runs = runs.assign(draws_per_s=runs.chains * runs.draws / runs.sampling_s)
    for (label, machine), line in runs[runs.valid].sort_values("chains").groupby(["label", "machine"], sort=True):
        style = {
            "marker": MACHINE_MARKERS[machines.index(machine) % len(MACHINE_MARKERS)],
            "color": colours[label],
            "label": f"{label} ({machine})",
        }
        left.plot(line.chains, line.draws_per_s, **style)
        right.plot(line.chains, line.ess_per_s, **style)
    marks = mark_invalid_and_failed(((left, "draws_per_s"), (right, "ess_per_s")), runs, "chains", colours)
    for handle in marks:
        left.add_line(handle)
    return log_log_pair(fig, "chains", "draws/s (all chains)", "ESS/s (min bulk)", legend=left, title=title)


def rwmh_label(m: dict) -> str:
    return f"RWMH {'JAX' if m['backend'] == 'jax' else 'NumPy'}-{records.measurement_device(m).upper()}"


def rwmh_svg(rwmh: list[dict], colours: dict) -> str:
    """Random-walk Metropolis in JAX and NumPy: draws/s and ESS/s against the number of chains, a line per
    backend and device (a marker per machine)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    table = pd.DataFrame([{**m, "line": rwmh_label(m), "machine": records.measurement_machine(m).label} for m in rwmh])
    machines = sorted(table.machine.unique())
    for (label, machine), line in table.sort_values("chains").groupby(["line", "machine"], sort=True):
        style = {
            "marker": MACHINE_MARKERS[machines.index(machine) % len(MACHINE_MARKERS)],
            "ls": "--",
            "color": colours[label],
            "label": f"{label} ({machine})",
        }
        left.plot(line.chains, line.draws_per_s, **style)
        right.plot(line.chains, line.ess_per_s, **style)
    return log_log_pair(
        fig,
        "chains",
        "draws/s (all chains)",
        "ESS/s (bulk)",
        legend=left,
        title="Chains: random-walk Metropolis on rlouf's 1-D four-component Gaussian mixture, JAX vs NumPy",
    )


def devices_svg(rows: list[dict]) -> str:
    """Speed-up of the sharded log density + gradient against the number of devices, with the ideal line."""
    table = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for model_id, line in table.sort_values("devices").groupby("model_id", sort=True):
        base = line[line.devices == line.devices.min()].ms_per_gradient.iloc[0]
        ax.plot(line.devices, base / line.ms_per_gradient, marker="o", label=model_id)
    n = np.array(sorted(table.devices.unique()))
    ax.plot(n, n / n.min(), ls=":", color="black", label="ideal")
    log_axes(ax)
    ax.set_xlabel(f"devices ({table.backend.iloc[0]})")
    ax.set_ylabel("speed-up over 1 device")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=SMALLEST_PT)
    return svg(fig, "Devices: sharded log density + gradient, speed-up against devices")
