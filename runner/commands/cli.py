"""``stanjax``: paired Stan and NumPyro/JAX benchmarks.

Exit codes: 0 done, 1 a run failed (or, for compare and nightly, something regressed), 2 bad input (one line
on stderr naming what is wrong), 130 stopped by Ctrl-C and 143 by SIGTERM (finished records kept).
"""

from __future__ import annotations

import argparse
import os
import sys

from stanjax.models import UsageError
from stanjax.runner.commands import (
    campaign,
    check,
    compare,
    compile,
    history,
    import_posterior,
    nightly,
    reference,
    report,
    run,
    study,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stanjax",
        description="Run paired Stan and NumPyro models on the same data, record ESS/s and cost per gradient, "
        "and write an HTML report of the comparison.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for module in (
        run,
        check,
        study,
        campaign,
        report,
        compare,
        nightly,
        history,
        reference,
        compile,
        import_posterior,
    ):
        module.add_parser(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as err:  # one line per problem (the static checks may find several)
        for line in str(err).splitlines():
            print(f"stanjax {args.verb}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader left (`stanjax history | head`): what was asked is done, say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
