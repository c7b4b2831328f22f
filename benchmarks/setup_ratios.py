"""Two engine setups of one campaign against each other, model by model, within its paired blocks: the median of
the per-block ratios (numerator ÷ denominator) of ESS/s and of ms per gradient, with the report's order-statistic
interval (``reports.stats.median_ratio``; 90 % from 5 blocks), as a Markdown table. For comparisons the report's
pairings do not make: a Stan program translated two ways (``--stan-programs model,model-O1``), two Stan front ends.

    .venv/bin/python benchmarks/setup_ratios.py results/epyc-2core/stanc-O1-default-20261128 \\
        --pair Stan-CPU-O1 Stan-CPU --pair Stan-CPU-expert-O1 Stan-CPU-expert

A block enters a ratio only where both of its runs passed every gate and were measured on a quiet machine; the
"blocks" column says how many did. ESS/s ratio > 1: the numerator samples faster; ms-a-gradient ratio < 1: its
gradient is cheaper.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

from stanjax.reports.stats import MIN_BLOCKS, median_ratio
from stanjax.runner.core import records


def block_ratios(runs: list[records.RunRecord], numerator: str, denominator: str) -> dict[str, dict[str, list]]:
    """Per model: the per-block ratios of ESS/s and of ms per gradient, and the blocks left out (with why)."""
    by_block: dict[tuple, dict[str, records.RunRecord]] = defaultdict(dict)
    for run in records.independent(runs):
        if run.label in (numerator, denominator) and run.status == "ok":
            by_block[run.model_id, run.size, run.block_of][run.label] = run
    out: dict[str, dict[str, list]] = defaultdict(lambda: {"ess": [], "gradient": [], "left_out": []})
    for (model_id, size, _), pair in sorted(by_block.items()):
        row = out[f"{model_id} ({size})"]
        if len(pair) < 2:
            row["left_out"].append("one side missing")
            continue
        top, bottom = pair[numerator], pair[denominator]
        why = [
            f"{run.label} {what}"
            for run in (top, bottom)
            for what, bad in (("invalid", not run.valid), ("loaded", not run.clean))
            if bad
        ]
        if why:
            row["left_out"].append(", ".join(why))
            continue
        row["ess"].append(top.metrics.ess_per_s / bottom.metrics.ess_per_s)
        row["gradient"].append(top.metrics.ms_per_gradient / bottom.metrics.ms_per_gradient)
    return out


def table(runs: list[records.RunRecord], numerator: str, denominator: str) -> str:
    lines = [
        f"| model | {numerator} ÷ {denominator}: ESS/s | ms a gradient | blocks |",
        "|---|---|---|---|",
    ]
    for model, row in block_ratios(runs, numerator, denominator).items():
        if not row["ess"] and set(row["left_out"]) == {"one side missing"}:
            continue  # a model that ran one of the two setups only (no expert program, say): not a comparison
        left_out = "; ".join(f"{why} ({n} block{'s' * (n > 1)})" for why, n in Counter(row["left_out"]).items())
        if not row["ess"]:
            lines.append(f"| {model} | no valid block | | 0: {left_out} |")
            continue
        ess, gradient = median_ratio(row["ess"]), median_ratio(row["gradient"])
        few = "" if ess.blocks >= MIN_BLOCKS else " (insufficient data)"
        left = f"; left out: {left_out}" if left_out else ""
        lines.append(
            f"| {model} | {ess.value:.3g}× ({ess.low:.3g}–{ess.high:.3g}) | {gradient.value:.3g}× "
            f"({gradient.low:.3g}–{gradient.high:.3g}) | {ess.blocks}{few}{left} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+", help="records: files or folders")
    parser.add_argument(
        "--pair", nargs=2, action="append", required=True, metavar=("NUMERATOR", "DENOMINATOR"), help="two labels"
    )
    args = parser.parse_args(argv)
    runs = records.read(args.results, summaries=False)
    labels = {run.label for run in runs}
    for numerator, denominator in args.pair:
        missing = [label for label in (numerator, denominator) if label not in labels]
        if missing:
            print(f"no runs labelled {missing[0]} (labels: {', '.join(sorted(labels))})", file=sys.stderr)
            return 2
        print(table(runs, numerator, denominator), end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
