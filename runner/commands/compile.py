"""``stanjax compile``: build every Stan program ahead of time (the Docker image does this at build time, so a
run measures sampling, not first-time compilation)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import models
from runner.campaign import WORKER_PYTHON
from runner.engines import get_engine


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "compile", help="compile the Stan programs ahead of time",
        description="Compile the Stan program of each model with the Stan engine that runs would use (bundled "
        "Stan, or CmdStan when one is found) into its cache; already compiled ones are skipped.")
    parser.add_argument("--models", nargs="+", metavar="ID", help="posterior IDs (default: all)")
    parser.set_defaults(handler=main)


def main(args) -> int:
    if Path(sys.executable) != Path(WORKER_PYTHON):
        # httpstan's cache key includes the interpreter's path: compile under the one the workers run.
        command = [WORKER_PYTHON, "-m", "runner.cli", "compile", *(["--models", *args.models] if args.models else [])]
        return subprocess.run(command).returncode
    engine = get_engine("stan")
    for model_id in args.models or list(models.registry()):
        handle = engine.compile(models.get(model_id))
        how = "cached" if handle["cached"] else f"compiled in {handle['compile_s']:.1f} s"
        print(f"{model_id}: {how}", flush=True)
    return 0
