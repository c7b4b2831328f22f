"""``stanjax``: paired Stan and NumPyro/JAX benchmarks.

Exit codes: 0 done, 1 a run failed (or, for compare and nightly, something regressed), 2 bad input (one line
on stderr naming what is wrong), 130 stopped by Ctrl-C and 143 by SIGTERM (finished records kept).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Any, NoReturn

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
from stanjax.runner.core import records


class Parser(argparse.ArgumentParser):
    """The CLI's parser, and every verb's: a bad option is one line (``stanjax run: error: argument --shard: ...``)
    and exit 2, as every other refusal is (``--help`` shows the usage); and every path option refuses an empty path
    (an unset ``--out "$OUT"``), which would be the current folder."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if kwargs.get("type") is Path:
            kwargs["type"] = path
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def path(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("an empty path; name one ('.' for the current folder)")
    return Path(text)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    shown, said = warnings.showwarning, set[str]()

    def say(message, category, *where):  # a damaged file: one plain line, once however often it is read
        if not issubclass(category, records.SkippedLines):
            return shown(message, category, *where)
        if str(message) not in said:
            said.add(str(message))
            print(f"stanjax {args.verb}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always", records.SkippedLines)  # `say` keeps it to once, whatever was said before
        warnings.showwarning = say
        try:
            return args.handler(args)
        except UsageError as err:  # one line per problem (the static checks may find several)
            for line in str(err).splitlines():
                print(f"stanjax {args.verb}: error: {line}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # the reader left (`stanjax history | head`): what was asked is done, say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except KeyboardInterrupt as stop:  # before anything ran (planning, --wait): one line, no traceback
            signum = getattr(stop, "signum", signal.SIGINT)  # stopping.Stopped: SIGTERM
            print(f"stanjax {args.verb}: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
            return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
