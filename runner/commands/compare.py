"""``stanjax compare BASE NEW``: speed and correctness regressions between two record sets."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from stanjax.models import UsageError
from stanjax.runner.campaigns import regressions
from stanjax.runner.core import records


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "compare",
        help="flag speed and correctness regressions between two record sets",
        description="Per measurement (machine, model, sizes, settings, data, engine setup): NEW ÷ BASE of median ESS/s and "
        "of median ms per gradient over valid repeats, flagged as a regression only when beyond --threshold "
        "AND significant (two-sided Mann–Whitney U over repeats, p < --alpha); and a gold check of every NEW "
        "run: posterior means within 0.3 reference sd. Writes OUT/regressions.json. Exit 1 when anything "
        "regressed, 0 otherwise, 2 on bad input.",
    )
    parser.add_argument("base", type=Path, help="records of the baseline (results.jsonl or a folder)")
    parser.add_argument("new", type=Path, help="records to check")
    parser.add_argument(
        "--threshold",
        type=float,
        default=regressions.THRESHOLD,
        help="relative change that counts (default: %(default)s)",
    )
    parser.add_argument(
        "--alpha", type=float, default=regressions.ALPHA, help="significance level (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, help="folder for regressions.json (default: NEW's folder)")
    parser.set_defaults(handler=main)


def print_table(result: dict) -> None:
    table = Table(title=f"NEW {', '.join(result['new']['campaigns'])} vs BASE {', '.join(result['base']['campaigns'])}")
    for column in (
        "model",
        "size",
        "engine",
        "runs (base, new)",
        "ESS/s new÷base (p)",
        "ms/grad new÷base (p)",
        "speed",
        "gold (worst sd)",
        "correctness",
    ):
        table.add_column(column)
    for e in result["entries"]:
        speed = e["speed"] or {}
        cells = [
            f"{speed[m]['ratio']:.3g} ({speed[m]['p_value']:.2g})" if m in speed else "–"
            for m in ("ess_per_s", "ms_per_gradient")
        ]
        status = (
            "REGRESSED"
            if e["speed_regression"]
            else ", ".join(sorted({v["status"] for v in speed.values()})) or "; ".join(e["notes"]) or "–"
        )
        worst = e["gold"]["worst"]
        gold = e["gold"]["status"] + (f" ({worst['worst_sd']:.2f}, {worst['worst_parameter']})" if worst else "")
        table.add_row(
            e["model_id"],
            e["size"],
            e["label"],
            f"{e['n_base']}, {e['n_new']}",
            *cells,
            status,
            gold,
            "REGRESSED" if e["correctness_regression"] else "ok",
        )
    console = Console(width=160)
    console.print(table)
    for change in result["version_changes"]:
        console.print(f"version change: {change['package']} {change['base']} -> {change['new']}")
    for side in ("base", "new"):
        if left := result["left_out"][side]:
            console.print(f"left out of {side.upper()}: " + ", ".join(f"{n} {why}" for why, n in left.items()))
    r = result["regressions"]
    console.print(
        f"{r['speed']} speed and {r['correctness']} correctness regression(s) "
        f"(threshold {result['threshold']:.0%}, alpha {result['alpha']}, gold band {result['gold_sd']} sd)"
    )


def check_rule(threshold: float, alpha: float) -> None:
    if not 0 < threshold < 10 or not 0 < alpha < 1:
        raise UsageError(f"--threshold must be in (0, 10) and --alpha in (0, 1), got {threshold} and {alpha}")


def find_regressions(base_path: Path, new_path: Path, out: Path, threshold: float, alpha: float) -> dict:
    """Read, compare, print and write regressions.json; the comparison."""
    check_rule(threshold, alpha)
    base, new = records.read(base_path), records.read(new_path)
    if not base or not new:
        raise UsageError(f"no run records in {base_path if not base else new_path}")
    if base == new:
        raise UsageError(
            f"BASE and NEW are the same {len(base)} run record(s) ({base_path}, {new_path}): nothing to compare"
        )
    result = regressions.find(base, new, threshold, alpha)
    result["paths"] = {"base": str(base_path), "new": str(new_path)}
    print_table(result)
    out.mkdir(parents=True, exist_ok=True)
    (out / "regressions.json").write_text(json.dumps(result, indent=1))
    return result


def main(args) -> int:
    out = args.out or (args.new if args.new.is_dir() else args.new.parent)
    result = find_regressions(args.base, args.new, out, args.threshold, args.alpha)
    return 1 if result["regressed"] else 0
