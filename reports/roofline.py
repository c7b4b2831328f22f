"""The roofline of a data-heavy gradient: ms per log density + gradient against N, measured before any sampling
(``measure: gradient_cost``, :mod:`stanjax.runner.measure.gradient_cost`: a GPU campaign's ``--calibrate`` and the sweeps
committed beside the records), a line per machine and setup (side, device, precision, chains a call), with the
floor a GPU's memory bandwidth sets: the design (N × D numbers) read twice, forward and back, at the data sheet's
peak. Where a GPU line reaches the row count of Tran & Hoffman's covtype (581,012), its distance from the floor is
said: how much of the GPU's time a gradient is not bound by reading the data."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax.reports.figures import SMALLEST_PT, log_axes, plt, svg
from stanjax.reports.study_figures import ITEM_BYTES, bandwidth
from stanjax.runner.core import records
from stanjax.runner.measure.gradient_clocks import CLOCK_WORDS, clock_of

COVTYPE = "covtype_synth-logistic_regression"
TRAN_HOFFMAN_ROWS = 581_012
FLOOR_AIM = 1.5  # issue 60: the GPU step within 1.5× of its floor at 581,012 rows


def table(measurements: list[dict], model_id: str = COVTYPE) -> pd.DataFrame:
    """One row per gradient-cost measurement of ``model_id``: its machine, line, N, D and ms; the newest of a
    repeated setup on one machine."""
    rows = []
    for m in measurements:
        if m.get("measure") != "gradient_cost" or m.get("model_id") != model_id:
            continue
        machine = records.measurement_machine(m)
        chains = f", {m['chains']} chains a call" if m["chains"] > 1 else ""
        threads = f", {m['threads']} threads" if m["side"] == "stan" and m["threads"] > 1 else ""
        side = "Stan" if m["side"] == "stan" else "JAX"
        rows.append(
            {
                "machine": machine.label,
                "gpus": machine.gpu,
                "line": f"{side}-{m['device'].upper()} {m['precision']}{chains}{threads}, {CLOCK_WORDS[clock_of(m)]} "
                f"({machine.label})",
                "device": m["device"],
                "precision": m["precision"],
                "n": m["sizes"]["N"],
                "d": m["sizes"].get("D"),
                "ms": m["ms_per_gradient"],
                "created": m.get("created", ""),
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values("created").drop_duplicates(["line", "n"], keep="last").sort_values(["line", "n"])


def figure(measurements: list[dict]) -> dict | None:
    """The roofline figure and its notes; None without gradient-cost measurements of covtype at two N or more."""
    frame = table(measurements)
    if frame.empty or frame.n.nunique() < 2:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for line, rows in frame.groupby("line", sort=True):
        ax.plot(rows.n, rows.ms, marker="o", ls="-" if rows.device.iloc[0] == "gpu" else "--", label=line)
    notes = []
    for (machine, precision), rows in frame[frame.device == "gpu"].groupby(["machine", "precision"], sort=True):
        peak = bandwidth(rows.gpus.iloc[0])
        if not peak or rows.d.isna().all():
            notes.append(f"{machine}: no floor drawn (its GPU's bandwidth is not in the table)")
            continue
        d = int(rows.d.max())
        n = np.geomspace(frame.n.min(), frame.n.max(), 20)
        floor_ms = 2 * n * d * ITEM_BYTES[precision] / peak * 1e3
        ax.plot(
            n,
            floor_ms,
            ls=":",
            color="black",
            label=f"floor, {precision} on {machine}: X read twice at {peak / 1e12:g} TB/s",
        )
        at = rows[rows.n == TRAN_HOFFMAN_ROWS]
        if len(at):
            floor = 2 * TRAN_HOFFMAN_ROWS * d * ITEM_BYTES[precision] / peak * 1e3
            ms = float(at.ms.min())
            notes.append(
                f"{machine}, {precision}: at {TRAN_HOFFMAN_ROWS:,} rows a gradient took {ms:.3g} ms against a floor of "
                f"{floor:.3g} ms, {ms / floor:.2f}× ({'within' if ms / floor <= FLOOR_AIM else 'outside'} the "
                f"{FLOOR_AIM:g}× aim)"
            )
    log_axes(ax)
    ax.set_xlabel("N (rows of the design)")
    ax.set_ylabel("ms per log density + gradient")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=SMALLEST_PT)
    title = "Roofline: covtype logistic regression, ms per gradient against N, measured before sampling"
    if frame[frame.device == "gpu"].empty:
        notes.append("no GPU measurement in these records yet: the CPU lines only")
    return {"title": title, "svg": svg(fig, title), "notes": notes}
