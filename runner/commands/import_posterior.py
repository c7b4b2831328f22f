"""``stanjax import``: lay out a posteriordb posterior as a pair of the zoo (:mod:`stanjax.runner.pairing.importer`)."""

from __future__ import annotations

from pathlib import Path

from stanjax.models import ROOT, UsageError


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "import",
        help="lay out a posteriordb posterior as a new pair (program, data, reference, NumPyro stub)",
        description="Read a posterior from a local posteriordb checkout (git clone "
        "https://github.com/stan-dev/posteriordb) and lay it out as a model of the zoo: stan/<model>.stan (the "
        "program as published, its source in a header), models/posteriordb/<data>.json (the data set, less "
        "entries the program does not declare), models/posteriordb/<posterior>.reference.json (posteriordb's "
        "reference draws summarised: the runs' outside truth, where posteriordb has them), models/<posterior>.py "
        "(the spec: fixed data at every size) and jax_models/<model>.py (a NumPyro stub with the data signature, "
        "for you to write). Then: write the port, `stanjax check <posterior>`, and models/README.md.",
    )
    parser.add_argument("posterior", help="posteriordb's name of the posterior, e.g. arma-arma11")
    parser.add_argument(
        "--posteriordb",
        type=Path,
        required=True,
        metavar="PATH",
        help="the posteriordb checkout (its root, or its posterior_database folder)",
    )
    parser.add_argument(
        "--into",
        type=Path,
        default=ROOT,
        metavar="DIR",
        help="the folder to lay it out in, as this repository is laid out, created if missing (default: this "
        "checkout; a model folder of yours joins runs with --model-dir DIR)",
    )
    parser.set_defaults(handler=main)


def main(args) -> int:
    from stanjax.runner.pairing import importer

    if args.into.exists() and not args.into.is_dir():
        raise UsageError(f"--into {args.into} is a file, not a folder")
    found = importer.posterior(args.posteriordb, args.posterior)  # a wrong name creates no folder
    try:
        args.into.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--into {args.into}: cannot create it: {err.strerror}") from None
    written = importer.lay_out(found, args.into, importer.command_line(args.posterior, args.posteriordb, args.into))
    for path in written:
        print(f"import: wrote {path}")
    stub = args.into / "jax_models" / f"{found.model_name}.py"
    print(
        f"import: next, write the NumPyro model in {stub}, then `stanjax check {found.name}`"
        + ("" if args.into.resolve() == ROOT else f" with --model-dir {args.into}")
        + (" and make its reference (`stanjax reference`)" if not found.draws_file else "")
    )
    return 0
