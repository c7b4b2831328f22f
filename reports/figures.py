"""Figures as inline SVG (matplotlib, Agg): every page of the report stays self-contained.

Every figure names its model and sampler in a title and labels every axis (``svg`` marks both, so the browser
test can find them); every engine label keeps one colour across the report (``palette``); log axes carry labelled
ticks; invalid and failed runs are drawn, marked, never dropped."""

from __future__ import annotations

import html
import io
import re
import textwrap

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from stanjax.reports.answer import title_of  # noqa: E402
from stanjax.reports.svg_text import own_ids, shared_styles  # noqa: E402

# Text from records (model IDs, labels) is drawn as written: a "$" never starts mathtext. Text stays text, named
# by the font its layout was measured in and a fallback (matplotlib's default list, repeated on every label, was a
# tenth of the report's index).
# The smallest text a figure draws: 8.5 pt is 11.3 px where the figure is shown at its own size (at 800 px and
# narrower a figure scrolls inside its box rather than shrink: base.html).
SMALLEST_PT = 8.5
plt.rcParams.update(
    {
        "svg.fonttype": "none",
        "font.size": 9,
        "legend.fontsize": SMALLEST_PT,
        "text.parse_math": False,
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans", "Arial"],
    }
)
# Coordinates in attributes, to a hundredth of a point (1/7200 inch) instead of matplotlib's millionth.
COORDINATES = re.compile(r'( (?:d|x|y|transform)=")([^"]*)"')
DECIMALS = re.compile(r"(\d\.\d\d)\d+")
# What an SVG needs no byte of: matplotlib's metadata block, the indentation between elements and the line breaks in
# path data, and its numbered ids of artists that nothing refers to (the axes' ids stay: the browser test finds the
# panels by them; clip paths and markers have hashed ids, kept).
METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)
BETWEEN_TAGS = re.compile(r">\s+<")
LINE_BREAKS = re.compile(r"\s*\n\s*")
ARTIST_IDS = re.compile(
    r' id="(?:patch|line2d|text|xtick|ytick|legend|LineCollection|PathCollection|matplotlib\.axis)_\d+"'
)

# The sampler each engine runs, for the figures' titles.
SAMPLERS = {"stan": "NUTS", "numpyro": "NUTS", "blackjax_nuts": "NUTS", "blackjax_chees": "ChEES-tuned HMC"}
# tab10, then its light variants: distinct colours for up to 20 labels.
# matplotlib's stubs type get_cmap as any Colormap (tab20 is a ListedColormap, its colors RGB tuples)
COLOURS: list[tuple[float, float, float]] = [
    plt.get_cmap("tab20").colors[i]  # type: ignore[attr-defined]
    for i in (*range(0, 20, 2), *range(1, 20, 2))
]
MACHINE_MARKERS = "osD^P*"


def palette(labels) -> dict[str, tuple]:
    """One colour per engine label for the whole report (the labels sorted, colours in turn)."""
    return {label: COLOURS[i % len(COLOURS)] for i, label in enumerate(sorted(set(labels)))}


def samplers(engines) -> str:
    """The samplers of the engines drawn, for a title: "NUTS", "NUTS and ChEES-tuned HMC"."""
    return " and ".join(sorted({SAMPLERS.get(e, e) for e in engines}))


def tick_formatter(suffix: str, minor: bool):
    """Plain numbers on log axes (10, 200, 0.5, 1,000; with ``suffix``); minor ticks labelled at 2 and 5 only."""

    def label(value, _):
        if minor and f"{value:.1e}"[0] not in "25":
            return ""
        plain = f"{round(value):,}" if value >= 1 else np.format_float_positional(value, precision=12, trim="-")
        return f"{plain}{suffix}"

    return ticker.FuncFormatter(label)


def log_axes(ax, x: bool = True, y: bool = True, suffix: str = "") -> None:
    """Log scale with plain, readable tick labels on the axes asked for."""
    for on, scale, axis, limits in (
        (x, ax.set_xscale, ax.xaxis, ax.get_xlim),
        (y, ax.set_yscale, ax.yaxis, ax.get_ylim),
    ):
        if on:
            scale("log")
            low, high = limits()  # after the switch to log: the autoscaled, positive limits
            if not low > 0:  # no value on this axis (a panel of failed runs only): one nominal decade
                low, high = 1, 10
                (ax.set_xlim if axis is ax.xaxis else ax.set_ylim)(low, high)
            axis.set_major_formatter(tick_formatter(suffix, minor=False))
            # Minor labels (2, 5) only where the axis spans under two decades; wider ones have enough majors.
            axis.set_minor_formatter(tick_formatter(suffix, minor=True) if high < 100 * low else ticker.NullFormatter())


def log_log_pair(fig, xlabel: str, left_label: str, right_label: str, legend, title: str) -> str:
    """Finish a figure of two log-log panels sharing an x quantity; the legend on the panel given."""
    for ax, ylabel in zip(fig.axes, (left_label, right_label)):
        log_axes(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(which="both", alpha=0.3)
    legend.legend(fontsize=SMALLEST_PT)
    return svg(fig, title)


def svg(fig, title: str, legend_below: list | None = None, legend_size: float = SMALLEST_PT) -> str:
    """The figure as an SVG element, titled (a drawn title and an SVG ``<title>``), its title and axis labels
    marked by id (ending ``figure-title``, ``x-label``, ``y-label``: ``own_ids``) for the browser test; ``legend_below``: handles of
    a legend under the panels (the saved figure grown to hold it), its text ``legend_size``."""
    # 0.12 in from the top whatever the height (matplotlib's 2 % of it put a tall figure's title over its panels')
    fig.suptitle(title, fontsize=9.5, y=1 - 0.12 / fig.get_figheight()).set_gid("figure-title")
    for i, ax in enumerate(fig.axes, 1):  # one id each: a figure of two panels has two x labels
        ax.xaxis.label.set_gid(f"axes{i}-x-label")
        ax.yaxis.label.set_gid(f"axes{i}-y-label")
    fig.tight_layout()
    if legend_below:
        fig.legend(
            handles=legend_below,
            loc="upper center",
            bbox_to_anchor=(0.5, 0),
            ncol=2,
            fontsize=legend_size,
            frameon=False,
        )
    buffer = io.StringIO()
    # no date and ids salted by the title, not at random: a report made again from the same records is the same
    with matplotlib.rc_context({"svg.hashsalt": title}):
        fig.savefig(buffer, format="svg", bbox_inches="tight" if legend_below else None, metadata={"Date": None})
    plt.close(fig)
    text = COORDINATES.sub(lambda m: m[1] + DECIMALS.sub(r"\1", m[2]) + '"', buffer.getvalue())
    text = text[text.index("<svg") :]
    text = shared_styles(ARTIST_IDS.sub("", LINE_BREAKS.sub(" ", BETWEEN_TAGS.sub("><", METADATA.sub("", text)))))
    start = text.index(">") + 1
    return own_ids(f"{text[:start]}<title>{html.escape(title)}</title>{text[start:]}")


def ess_bars(runs: pd.DataFrame) -> pd.DataFrame:
    """Per machine, size, model and engine label of the campaigns: the median ESS/s over its valid runs (NaN
    where none was valid), and how many runs there were and were valid. What the bar chart draws."""
    campaign = runs[runs.study == ""]
    keys = ["machine", "size", "model_id", "label"]
    medians = campaign[campaign.valid].groupby(keys).ess_per_s.median().rename("ess_per_s")
    counts = campaign.groupby(keys).agg(
        runs=("valid", "size"), valid=("valid", "sum"), engine_name=("engine", "first"), chains=("chains", "first")
    )
    return counts.join(medians).reset_index()


def bar_chart_svg(panel: pd.DataFrame, colours: dict, machine: str, size: str) -> str:
    """One machine at one size: a bar per model and engine label at its median ESS/s over valid runs (each bar's
    id holds its value), and "no valid run" where a label ran a model without one (log scale)."""
    model_ids = sorted(panel.model_id.unique())
    labels = sorted(panel.label.unique())
    height = 0.8 / len(labels)
    fig, ax = plt.subplots(figsize=(8, 1.3 + 0.17 * len(model_ids) * len(labels)))
    for i, label in enumerate(labels):
        for row in panel[panel.label == label].itertuples():
            y = model_ids.index(row.model_id) + i * height
            if row.valid:
                bar = ax.barh([y], [row.ess_per_s], height=height, color=colours[label])
                bar.patches[0].set_gid(f"bar:{row.ess_per_s!r}")
            else:
                ax.text(
                    0.005,
                    y,
                    f"{label}: no valid run ({row.runs} run(s))",
                    va="center",
                    fontsize=SMALLEST_PT,
                    color=colours[label],
                    transform=ax.get_yaxis_transform(),
                )
    ax.set_yticks(np.arange(len(model_ids)) + height * (len(labels) - 1) / 2, model_ids)
    ax.set_ylim(len(model_ids) - 0.1, -0.3)
    if not panel.valid.any():  # nothing to scale the axis by
        ax.set_xlim(1, 10)
    log_axes(ax, y=False)
    ax.set_xlabel("ESS/s (min bulk ESS ÷ user s, compile excluded; median over valid runs)")
    ax.set_ylabel("model")
    ax.legend(
        handles=[Patch(color=colours[label], label=label) for label in labels], loc="lower right", fontsize=SMALLEST_PT
    )
    ax.grid(axis="x", which="both", alpha=0.3)
    chains = "/".join(str(c) for c in sorted(panel.chains.unique()))
    return svg(
        fig,
        f"ESS/s per model and engine on {machine}, size {size} ({samplers(panel.engine_name.unique())}, "
        f"{chains} chains)",
    )


def ratio_label(value, _=None) -> str:
    """A tick on a ratio axis as the text writes ratios: "10×", "1×", and below 1 "10× slower", never "0.1×"."""
    if value <= 0:
        return ""
    return f"{round(value):,}×" if value >= 1 else f"{round(1 / value):,}× slower"


def ratio_axis(ax, stacked: bool = False) -> None:
    """A log x axis of ratios, labelled on both sides of 1× (decades; at 2 and 5 too where it spans under two
    decades); ``stacked``: "slower" under its number, for a narrow panel."""
    ax.set_xscale("log")
    low, high = ax.get_xlim()

    def label(value, _=None) -> str:
        text = ratio_label(value)
        return text.replace(" ", "\n") if stacked else text

    ax.xaxis.set_major_formatter(ticker.FuncFormatter(label))
    ax.xaxis.set_minor_formatter(
        ticker.FuncFormatter(lambda v, _: label(v) if f"{v:.1e}"[0] in "25" else "")
        if high < 100 * low
        else ticker.NullFormatter()
    )
    ax.axvline(1, color="grey", lw=0.8)


def decade_limits(values) -> tuple[float, float]:
    """Log-axis limits at whole decades around ``values`` and 1, at least 0.1–10: labelled ticks on both sides
    of 1."""
    values = np.asarray([v for v in values if v > 0 and np.isfinite(v)] + [0.5, 2.0])
    return 10.0 ** np.floor(np.log10(values.min())), 10.0 ** np.ceil(np.log10(values.max()))


def forest_svg(comparison: dict) -> str:
    """Per-model ratio with its 90 % interval, compile excluded (●) and included (□), and the geometric mean."""
    rows = [(title_of(m["model_id"]), m["warm"], m["cold"]) for m in comparison["models"]]
    rows.append((f"geometric mean ({len(comparison['models'])} models)", comparison["warm"], comparison["cold"]))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.32 * len(rows)))
    y = np.arange(len(rows))
    for offset, ratios, marker, name in (
        (-0.12, [warm for _, warm, _ in rows], "o", "compile excluded"),
        (0.12, [cold for _, _, cold in rows], "s", "compile included"),
    ):
        points = [(i, ratio) for i, ratio in enumerate(ratios) if ratio is not None]
        if not points:
            continue
        ys = np.array([i for i, _ in points]) + offset
        values = np.array([r.value for _, r in points])
        # Clipped at 0: with one repeat the interval is the point itself, up to rounding.
        errors = np.maximum(np.array([[r.value - r.low for _, r in points], [r.high - r.value for _, r in points]]), 0)
        ax.errorbar(values, ys, xerr=errors, fmt=marker, capsize=2, label=name, mfc="white" if marker == "s" else None)
    ax.axhline(len(rows) - 1.5, color="grey", lw=0.5, ls=":")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(*decade_limits([v for _, w, c in rows for r in (w, c) if r for v in (r.low, r.high)]))
    ratio_axis(ax)
    ax.set_xlabel(f"{comparison['numerator']} ESS/s ÷ {comparison['denominator']} ESS/s (90 % bootstrap interval)")
    ax.set_ylabel("model")
    ax.legend(fontsize=SMALLEST_PT, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="x", which="both", alpha=0.3)
    return svg(
        fig,
        f"{comparison['numerator']} ÷ {comparison['denominator']} in ESS/s per model, "
        f"{comparison['machine']}, size {comparison['size']}",
    )


# Drawn at most 52rem wide (base.html), 768 px in an 800 px window: every word at 11 px or more (browser test).
ANSWER_WIDTH_IN, ANSWER_TEXT_PT = 7.5, 9
ANSWER_LABEL_CHARS = 36  # a longer model title takes two lines: one long title squeezed both panels to slivers


def answer_svg(overview: list[dict], min_blocks: int, title: str) -> str:
    """The first screen's figure: one panel per pairing (JAX-GPU, JAX-CPU ÷ Stan-CPU), every model a row, grouped
    by regime under a row naming the regime in full; each ratio a marker per machine and numerator setup, filled
    with its 90 % interval where it rests on ``min_blocks`` blocks or more, hollow without an interval below that;
    "no ratio" where there is none. A model with no ratio in any panel is left out (the regime map below lists it):
    the zoo's 64 models would push the answer off the first screen."""
    kept = [i for i in range(len(overview[0]["rows"])) if any(o["rows"][i]["entries"] for o in overview)]
    overview = [{**o, "rows": [o["rows"][i] for i in kept]} for o in overview]  # none: empty panels, said
    rows = overview[0]["rows"]
    slots: list[str | int] = []  # from the top: a regime's name, then the index of each of its models' rows
    for index, row in enumerate(rows):
        if not index or row["regime"] != rows[index - 1]["regime"]:
            slots.append(row["regime"])
        slots.append(index)
    at_slot = {slot: y for y, slot in enumerate(slots) if isinstance(slot, int)}
    keys = sorted({(e["machine"], e["numerator"]) for o in overview for r in o["rows"] for e in r["entries"]})
    style = {key: (MACHINE_MARKERS[i % len(MACHINE_MARKERS)], COLOURS[i % len(COLOURS)]) for i, key in enumerate(keys)}
    pitch = 0.4 if any(len(r["title"]) > ANSWER_LABEL_CHARS for r in rows) else 0.24  # inches a row: two lines
    fig, axes = plt.subplots(
        1, len(overview), figsize=(ANSWER_WIDTH_IN, 1.6 + pitch * max(len(slots), 6)), squeeze=False
    )
    axes[0][0].set_zorder(1)  # drawn last, its regimes' names run over the other panels' backgrounds
    axes[0][0].patch.set_visible(False)
    for ax, o in zip(axes[0], overview):
        values = []
        for index, row in enumerate(o["rows"]):
            y = at_slot[index]
            for j, e in enumerate(row["entries"]):
                marker, colour = style[(e["machine"], e["numerator"])]
                ratio, at = e["ratio"], y + (j - (len(row["entries"]) - 1) / 2) * 0.2
                if ratio.blocks >= min_blocks:
                    ax.errorbar(
                        [ratio.value],
                        [at],
                        xerr=[[max(ratio.value - ratio.low, 0)], [max(ratio.high - ratio.value, 0)]],
                        fmt=marker,
                        color=colour,
                        capsize=2,
                        ms=4,
                    )
                    values += [ratio.low, ratio.high]
                else:
                    ax.plot([ratio.value], [at], marker, color=colour, mfc="white", ms=4)
                    values.append(ratio.value)
            if not row["entries"]:
                ax.text(0.02, y, "no ratio", transform=ax.get_yaxis_transform(), color="grey", va="center")
        for y, slot in enumerate(slots):
            if isinstance(slot, str) and y:
                ax.axhline(y - 0.5, color="grey", lw=0.5, ls=":")
        ax.set_ylim(max(len(slots), 1) - 0.5, -0.5)
        if not slots:
            ax.text(0.5, 0, "no model has a ratio yet", transform=ax.get_yaxis_transform(), ha="center", color="grey")
        ax.set_xlim(*decade_limits(values))
        ratio_axis(ax, stacked=True)
        ax.grid(axis="x", which="both", alpha=0.3)
        pairing = o["pairing"]
        ax.set_title(f"{pairing.numerator_name} ÷ {pairing.denominator_name}", fontsize=9)
        ax.set_xlabel(f"{pairing.numerator_name} ESS/s ÷\n{pairing.denominator_name} ESS/s")
        ax.set_yticks(list(at_slot.values()))
        ax.set_ylabel("model, by regime")
        if ax is axes[0][0]:
            ax.set_yticklabels([textwrap.fill(r["title"], ANSWER_LABEL_CHARS) for r in rows])
            for y, slot in enumerate(slots):
                if isinstance(slot, str):  # the regime's name in full, on a row of its own, across the panels
                    ax.text(
                        0.0,
                        y,
                        slot,
                        transform=ax.get_yaxis_transform(),
                        ha="left",
                        va="center",
                        fontsize=ANSWER_TEXT_PT,
                        style="italic",
                        color="#444",
                        clip_on=False,
                    ).set_in_layout(False)  # it runs across the panels, on a row of its own
        else:  # its label on the right: the regimes' names run across the panels at its left
            ax.tick_params(labelleft=False)
            ax.yaxis.set_label_position("right")
    handles = [
        Line2D([], [], ls="", marker=style[key][0], color=style[key][1], label=f"{key[1]} on {key[0]}") for key in keys
    ]
    hollow = f"hollow: fewer than {min_blocks} blocks, no interval"
    handles.append(Line2D([], [], ls="", marker="o", color="grey", mfc="white", label=hollow))
    return svg(fig, title, legend_below=handles, legend_size=ANSWER_TEXT_PT)


def history_svg(group: pd.DataFrame, colours: dict, title: str) -> str:
    """One model over a history: median ESS/s and ms per gradient per campaign, a line per engine label."""
    medians = (
        group.groupby(["label", "campaign_id"])
        .agg(
            created=("created", "min"),
            ess_per_s=("ess_per_s", "median"),
            ms=("ms_per_gradient", "median"),
        )
        .reset_index()
        .sort_values("created")
    )
    created = dict(zip(medians.campaign_id, medians.created))
    order = {c: i for i, c in enumerate(sorted(set(medians.campaign_id), key=created.__getitem__))}
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    for label, line in medians.groupby("label", sort=True):
        x = [order[c] for c in line.campaign_id]
        left.plot(x, line.ess_per_s, marker="o", label=label, color=colours[label])
        right.plot(x, line.ms, marker="o", label=label, color=colours[label])
    for ax, ylabel in ((left, "ESS/s (median)"), (right, "ms per gradient (median)")):
        log_axes(ax, x=False)
        ax.set_xticks(range(len(order)), [c[:15] for c in order], rotation=30, ha="right", fontsize=SMALLEST_PT)
        ax.set_xlabel("campaign")
        ax.set_ylabel(ylabel)
        ax.grid(which="both", alpha=0.3)
    left.legend(fontsize=SMALLEST_PT)
    return svg(fig, title)
