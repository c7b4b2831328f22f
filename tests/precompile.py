"""Compile every Stan program the tests build, before the tests, ``--jobs`` at once (``make test`` runs this).

The programs: every model's ``stan/*.stan``, its ``stan/threaded/*.stan`` where it has one, and the planted-prior-change copy of eight schools
(``planted_prior_program``, the one definition ``tests/test_density.py`` plants). Each is built through httpstan,
as ``stan.build`` and the bundled Stan engine build it, under the workers' interpreter: httpstan's cache is keyed
by the program's text and the interpreter's path, so the tests then find every program in the cache and compile
nothing. One line per program; the compilers' messages go to ``--log``.

    .venv/bin/python -m tests.precompile --jobs 2 --log out/test-compile.log
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import models
from runner.campaign import WORKER_PYTHON
from runner.commands.compile import compile_each

EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"
PLANTED = "eight_schools-planted_prior_change"


def planted_prior_program() -> str:
    """Eight schools with mu's prior changed from normal(0, 5) to normal(0, 6): a mismatch with the NumPyro model
    the log-density check must detect."""
    original = models.get(EIGHT_SCHOOLS).stan_file.read_text()
    planted = original.replace("mu ~ normal(0, 5);", "mu ~ normal(0, 6);")
    assert planted != original, "eight schools' program no longer states mu ~ normal(0, 5);"
    return planted


def programs() -> dict[str, str]:
    """Label -> Stan program text: the registry's, then the planted copy."""
    found = {spec.id: spec.stan_file.read_text() for spec in models.registry().values()}
    found |= {f"{spec.id} (threaded)": spec.stan_threaded_file.read_text()
              for spec in models.registry().values() if spec.stan_threaded_file}
    found[PLANTED] = planted_prior_program()
    return found


def build(label: str) -> int:
    """Compile one program through httpstan (what the pool runs in each process); print the compiler's and
    stanc's messages, then one line."""
    import asyncio

    import httpstan.cache
    import httpstan.models
    import stan.common

    code = programs()[label]
    cached = httpstan.models.calculate_model_name(code) in httpstan.cache.list_model_names()

    async def post():
        async with stan.common.HttpstanClient() as client:
            response = await client.post("/models", json={"program_code": code})
            return response.status, response.json()

    start = time.perf_counter()
    status, body = asyncio.run(post())
    seconds = time.perf_counter() - start
    for key in ("stanc_warnings", "compiler_output", "message"):
        if body.get(key):
            print(f"--- {key}:\n{body[key].rstrip()}")
    if status != 201:
        print(f"{label}: httpstan answered {status}")
        return 1
    print(f"{label}: {'cached' if cached else f'compiled in {seconds:.1f} s'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.precompile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", "-j", type=int, default=2, help="programs compiled at once (default: 2)")
    parser.add_argument("--log", type=Path, help="file for the compilers' output (default: the terminal)")
    parser.add_argument("--one", metavar="LABEL", help=argparse.SUPPRESS)  # one program, in this process
    args = parser.parse_args(argv)
    if args.one:
        return build(args.one)
    if args.log:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_text("")
    start = time.perf_counter()
    tasks = [(label, [WORKER_PYTHON, "-m", "tests.precompile", "--one", label]) for label in programs()]
    code = compile_each(tasks, args.jobs, args.log)
    where = f"; compiler output in {args.log}" if args.log else ""
    outcome = "ready" if code == 0 else "NOT ALL compiled"
    print(f"precompile: {len(tasks)} Stan programs {outcome} in {time.perf_counter() - start:.0f} s, {args.jobs} at "
          f"once{where}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
