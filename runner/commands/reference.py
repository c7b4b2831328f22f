"""``stanjax reference``: make the reference posterior of a model at a size (a long Stan run)."""

from __future__ import annotations

import shlex
from pathlib import Path

import models
from models import UsageError
from runner.config import RunConfig


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "reference", help="make reference posteriors (long Stan runs) for the validity gates",
        description="Run the Stan engine long on a model's data (fixed seeds) and write "
        "references/<id>.<size>.json: mean, sd, MCSE, ESS and R-hat per scalar parameter, with a header "
        "recording the command, seeds, engine, versions and data hash. Refuses to write an unconverged "
        "reference (R-hat > 1.01). Runs' posterior means are checked against these files.")
    parser.add_argument("models", nargs="+", metavar="ID", help="posterior IDs, or 'all'")
    parser.add_argument("--size", default="default", help="size preset (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="data seed, as for `run` (default: %(default)s)")
    parser.add_argument("--chains", type=int, default=8, help="chains (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1000, help="warmup iterations per chain (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=5000, help="draws per chain (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="folder (default: references/ in the checkout)")
    parser.set_defaults(handler=main)


def main(args) -> int:
    from runner import references

    ids = list(models.registry()) if args.models == ["all"] else args.models
    specs = [models.get(model_id) for model_id in ids]
    for spec in specs:
        spec.size_kwargs(args.size)
        if spec.ground_truth and args.models != ["all"]:
            raise UsageError(f"{spec.id} is checked against an external ground truth (its spec's ground_truth), "
                             "never a reference of ours")
    specs = [spec for spec in specs if not spec.ground_truth]
    if min(args.chains, args.warmup, args.draws) < 1:
        raise UsageError("--chains, --warmup and --draws must be positive")
    config = RunConfig(size=args.size, chains=args.chains, warmup=args.warmup, draws=args.draws, seed=args.seed)
    folder = args.out or references.REFERENCES_DIR
    for spec in specs:
        command = shlex.join(["stanjax", "reference", spec.id, "--size", args.size, "--seed", str(args.seed),
                              "--chains", str(args.chains), "--warmup", str(args.warmup), "--draws", str(args.draws)])
        print(f"reference: {spec.id} ({args.size}) ...", flush=True)
        file = references.write(references.generate(spec, config, command), folder)
        print(f"reference: wrote {file}")
    return 0
