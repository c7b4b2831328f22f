"""``stanjax reference``: make the reference posterior of a model at a size (a long Stan run)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from stanjax import models
from stanjax.models import UsageError
from stanjax.runner.core.config import RunConfig, blas_threads


def add_parser(verbs) -> None:
    from stanjax.runner.measure.references import MAX_BATCHES, TARGET_MCSE

    parser = verbs.add_parser(
        "reference",
        help="make reference posteriors (long runs) for the validity gates",
        description="Sample a model's data (fixed seeds) in batches of chains until every parameter's MCSE of mean "
        "and sd is at most --target-mcse posterior sds (an sd whose draws' Pareto k-hat is 0.25 or more, an "
        "infinite fourth moment, excepted: the gate does not check it) and R-hat <= 1.01, then write "
        "references/<id>.<size>.json: mean, sd, 5/50/95 % quantiles with their MCSEs, ESS and R-hat per scalar "
        "parameter, with a header recording the command, engine, batches, seeds, versions and data hash. Writes "
        "nothing when --max-batches are not enough. Runs' posterior means and sds are checked against these files.",
    )
    parser.add_argument("models", nargs="+", metavar="ID", help="posterior IDs, or 'all'")
    parser.add_argument("--size", default="default", help="size preset (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="data seed, as for `run` (default: %(default)s)")
    parser.add_argument(
        "--engine",
        default="stan",
        choices=REFERENCE_ENGINES,
        help="the CPU engine that samples it: any whose runs pass the gates on the model (the "
        "density test proves the pair targets one posterior); the fastest for a long reference "
        "(default: %(default)s)",
    )
    parser.add_argument("--chains", type=int, default=8, help="chains per batch (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1000, help="warmup iterations per chain (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=2500, help="draws per chain (default: %(default)s)")
    parser.add_argument(
        "--target-mcse",
        type=float,
        default=TARGET_MCSE,
        help="stop when every MCSE of mean and sd is at most this many posterior sds "
        "(default: %(default)s, an ESS of about 10,000)",
    )
    parser.add_argument(
        "--max-batches",
        type=int,
        default=MAX_BATCHES,
        help="give up (writing nothing) after this many batches (default: %(default)s)",
    )
    parser.add_argument("--out", type=Path, default=None, help="folder (default: references/ in the checkout)")
    parser.set_defaults(handler=main)


REFERENCE_ENGINES = ("stan", "numpyro")


def main(args) -> int:
    from stanjax.runner.core.engine_registry import entry
    from stanjax.runner.measure import references

    ids = list(models.registry()) if args.models == ["all"] else args.models
    specs = [models.get(model_id) for model_id in ids]
    for spec in specs:
        spec.size_kwargs(args.size)
        if spec.ground_truth and spec.ground_truth(args.size) and args.models != ["all"]:
            raise UsageError(
                f"{spec.id} at size {args.size} is checked against an external ground truth (its "
                "spec's ground_truth), never a reference of ours"
            )
        if spec.reference_twin and args.models != ["all"]:
            raise UsageError(
                f"{spec.id}'s reference is its twin's (its spec's reference_twin): run `stanjax reference "
                f"{spec.reference_twin} --size {args.size}`"
            )
    specs = [
        spec for spec in specs if not (spec.ground_truth and spec.ground_truth(args.size)) and not spec.reference_twin
    ]
    if min(args.chains, args.warmup, args.draws, args.max_batches) < 1:
        raise UsageError("--chains, --warmup, --draws and --max-batches must be positive")
    if not 0 < args.target_mcse < 1:
        raise UsageError(f"--target-mcse must be between 0 and 1 posterior sd, got {args.target_mcse}")
    config = RunConfig(size=args.size, chains=args.chains, warmup=args.warmup, draws=args.draws, seed=args.seed)
    # As a campaign's worker does: OpenBLAS's own threads would stall parallel chains' LAPACK calls (set before
    # scipy loads; an OPENBLAS_NUM_THREADS already set is kept, and the header's engine info says which).
    os.environ.setdefault(
        "OPENBLAS_NUM_THREADS",
        str(blas_threads(0, args.chains, entry(args.engine).placement("cpu", x64=True).chain_method)),
    )
    folder = args.out or references.REFERENCES_DIR
    for spec in specs:
        command = shlex.join(
            [
                "stanjax",
                "reference",
                spec.id,
                "--size",
                args.size,
                "--seed",
                str(args.seed),
                "--engine",
                args.engine,
                "--chains",
                str(args.chains),
                "--warmup",
                str(args.warmup),
                "--draws",
                str(args.draws),
                "--target-mcse",
                str(args.target_mcse),
                "--max-batches",
                str(args.max_batches),
            ]
        )
        print(f"reference: {spec.id} ({args.size}) ...", flush=True)
        try:
            reference = references.generate(
                spec,
                config.for_model(spec),
                command,
                args.engine,
                args.target_mcse,
                args.max_batches,
                progress=lambda line: print(line, flush=True),
            )
        except references.NotConverged as err:  # a model that does not mix: said, not a traceback
            print(f"reference: {err}", file=sys.stderr)
            return 1
        print(f"reference: wrote {references.write(reference, folder)}")
    return 0
