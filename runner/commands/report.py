"""``stanjax report``: turn result records into one self-contained HTML report (plus CSV and JSON)."""

from __future__ import annotations

import argparse
from pathlib import Path

from stanjax.models import UsageError


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "report",
        help="write the HTML report from result records",
        description="Read every record in RESULTS (results.jsonl files or folders searched for *.jsonl; several "
        "merge, e.g. the shards of a campaign run on several machines, each grouped by its machine) and write "
        "OUT/index.html, OUT/README.md, OUT/runs.csv.gz, OUT/summary.json and OUT/records.json.gz. Never runs a model.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("results", type=Path, nargs="*", default=[Path("out/results")], help="records to read")
    parser.add_argument("-o", "--out", type=Path, default=Path("out/report"), help="folder for the report")
    parser.add_argument(
        "--records-in-place",
        action="store_true",
        help="link to the one RESULTS folder instead of copying its records into "
        "OUT/records.json.gz (a rendering committed beside its records keeps them once)",
    )
    parser.set_defaults(handler=main)


def main(args) -> int:
    from stanjax.reports.build import build

    if args.records_in_place and len(args.results) != 1:
        raise UsageError(f"--records-in-place links to one results folder, got {len(args.results)}")
    index = build(
        args.results[0] if args.records_in_place else args.results, args.out, records_in_place=args.records_in_place
    )
    print(f"report: {index}")
    return 0
