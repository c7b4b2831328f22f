"""``stanjax history``: list the runs kept in a history store (results/<machine>/<folder>/), or pack closed
campaigns' folders there (``--close``)."""

from __future__ import annotations

import sys
from pathlib import Path

from stanjax.models import UsageError
from stanjax.runner.core import history, packing, records


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "history",
        help="list the runs kept per machine in a history store",
        description="List every <machine>/<folder>/results.jsonl under HISTORY: when it ran, how many runs "
        "(and how many valid), how many models, at which commit; then a line on stderr for each folder it cannot "
        "read, saying why (an empty file, only damaged lines, another schema's records). Exit 2 when it can read "
        "none.",
    )
    parser.add_argument(
        "history", type=Path, nargs="?", default=Path("results"), help="history store (default: %(default)s)"
    )
    parser.add_argument(
        "--close",
        type=Path,
        nargs="+",
        metavar="FOLDER",
        help="pack each closed campaign's FOLDER to be committed: its runs' per-parameter summaries into "
        f"{packing.PARAMETERS_FILE} (float64 columns), its records into {records.RESULTS_FILE}.gz; nothing is "
        "lost (checked byte for byte before the plain file goes) and every reader reads it as before",
    )
    parser.set_defaults(handler=main)


def close(folders: list[Path]) -> int:
    missing = [f for f in folders if not any((f / name).exists() for name in records.RESULTS_FILES)]
    if missing:
        raise UsageError(f"no {records.RESULTS_FILE} in {missing[0]}")
    for folder in folders:
        packed, plain = folder / (records.RESULTS_FILE + ".gz"), folder / records.RESULTS_FILE
        if plain.exists() and packed.exists():
            raise UsageError(f"{folder} holds both {plain.name} and {packed.name}: a campaign still adding to it")
        if packed.exists():
            sidecar = folder / packing.PARAMETERS_FILE
            if sidecar.exists() and packing.up_to_date(sidecar):
                print(f"{folder}: packed already")
                continue
            plain.write_bytes(packing.expand(packed))  # packed again, as close packs now
            packed.unlink()
            sidecar.unlink(missing_ok=True)
        sizes = packing.close(plain)
        print(f"{folder}: {sizes['before'] / 2**20:.1f} MiB -> {sizes['after'] / 2**20:.1f} MiB")
    return 0


def main(args) -> int:
    """The listing of every folder it can read, then a line per folder it cannot (exit 0); exit 2 when it can read
    none (a line per folder) or there is none."""
    if args.close:
        return close(args.close)
    folders = history.run_folders(args.history)
    if not folders:
        raise UsageError(f"no <machine>/<folder>/results.jsonl under {args.history}")
    listed, unread = [], []
    for folder in folders:
        try:
            listed.append(history.summary(folder))
        except records.RecordsError as err:
            unread.append(str(err))
    if not listed:
        raise UsageError("\n".join(unread))
    print(f"{'machine':<24} {'folder':<34} {'created':<26} {'runs':>5} {'valid':>5} {'models':>6}  commit")
    for s in listed:
        print(
            f"{s['machine']:<24} {s['folder']:<34} {s['created']:<26} {s['runs']:>5} {s['valid']:>5} "
            f"{s['models']:>6}  {', '.join(s['commits'])}"
        )
    for line in unread:
        print(f"stanjax history: warning: {line}", file=sys.stderr)
    return 0
