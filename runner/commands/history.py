"""``stanjax history``: list the runs kept in a history store (results/<machine>/<folder>/)."""

from __future__ import annotations

from pathlib import Path

from stanjax.models import UsageError
from stanjax.runner import history


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "history",
        help="list the runs kept per machine in a history store",
        description="List every <machine>/<folder>/results.jsonl under HISTORY: when it ran, how many runs "
        "(and how many valid), how many models, at which commit.",
    )
    parser.add_argument(
        "history", type=Path, nargs="?", default=Path("results"), help="history store (default: %(default)s)"
    )
    parser.set_defaults(handler=main)


def main(args) -> int:
    folders = history.run_folders(args.history)
    if not folders:
        raise UsageError(f"no <machine>/<folder>/results.jsonl under {args.history}")
    print(f"{'machine':<24} {'folder':<34} {'created':<26} {'runs':>5} {'valid':>5} {'models':>6}  commit")
    for folder in folders:
        s = history.summary(folder)
        print(
            f"{s['machine']:<24} {s['folder']:<34} {s['created']:<26} {s['runs']:>5} {s['valid']:>5} "
            f"{s['models']:>6}  {', '.join(s['commits'])}"
        )
    return 0
