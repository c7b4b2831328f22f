"""Compile every Stan program the tests build, before the tests, ``--jobs`` at once (``make test`` runs this).

The programs: every model's ``stan/*.stan``, its ``stan/threaded/*.stan`` and ``stan/expert/*.stan`` where it has
them, and the worked examples' programs (``examples/*/stan/*.stan``, which tests/pairing/test_check.py builds), each
built for the host's ISA (``-march=native``, the runs' default), and eight schools for x86-64-v2 too (the ISA tests
build both). Each is
built as the bundled Stan engine builds it (``HttpstanBackend.compile``), under the workers' interpreter:
httpstan's cache is keyed by the program's text (with the flags' comment) and the interpreter's path, so the tests
then find every program in the cache and compile nothing. One line per program compiled (one line in all when
every program is in the cache already); the compilers' messages go to ``--log``.

What the programs share is built first (``stan_build.prepare``: the services objects, and Stan's model header
precompiled once per build that two or more programs share, as ``stanjax run`` does before its runs); a header the
compiler refuses is said on the program's line.

    .venv/bin/python -m tests.precompile --jobs 2 --log out/test-compile.log
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.commands.compile import compile_each
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.measure.jobs import WORKER_PYTHON
from tests.tiers import zoo_only

EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"


def programs(zoo: bool = True) -> dict[str, tuple[Path, str, tuple[str, ...]]]:
    """Label -> (Stan program, ISA it is built for, stanc's options): each model's program, then its threaded and
    expert ones, then the examples', for the host's ISA; then eight schools for x86-64-v2, and translated with
    stanc's optimiser (--O1). ``zoo=False``: without the programs of models whose tests the zoo tier alone runs."""
    specs = [spec for spec in models.registry().values() if zoo or not zoo_only(spec.id)]
    found = {spec.id: (spec.stan_file, "native", ()) for spec in specs}
    found |= {
        f"{spec.id} (threaded)": (spec.stan_threaded_file, "native", ()) for spec in specs if spec.stan_threaded_file
    }
    found |= {f"{spec.id} (expert)": (spec.stan_expert_file, "native", ()) for spec in specs if spec.stan_expert_file}
    found |= {
        f"example {path.parent.parent.name}/{path.name}": (path, "native", ())
        for path in sorted((ROOT / "examples").glob("*/stan/*.stan"))
    }
    found[f"{EIGHT_SCHOOLS} (x86-64-v2)"] = (models.get(EIGHT_SCHOOLS).stan_file, "x86-64-v2", ())
    found[f"{EIGHT_SCHOOLS} (O1)"] = (models.get(EIGHT_SCHOOLS).stan_file, "native", ("--O1",))
    return found


def once_each(found: dict[str, tuple[Path, str, tuple[str, ...]]]) -> dict[str, tuple[Path, str, tuple[str, ...]]]:
    """``found`` with each program built once: models that share a program (posteriordb's nes years) under the first
    label (a second job would wait on the first's lock for nothing)."""
    first: dict[str, str] = {}
    for label, (path, program_isa, options) in found.items():
        first.setdefault(HttpstanBackend.program_code(path, program_isa, options), label)
    return {label: found[label] for label in first.values()}


def all_cached(found: dict[str, tuple[Path, str, tuple[str, ...]]]) -> bool:
    """Whether httpstan's cache holds every program ``found`` already (then no header is needed)."""
    return all(HttpstanBackend.cached(path, program_isa, options) for path, program_isa, options in found.values())


def threads(path: Path) -> bool:
    """Whether the bundled Stan builds the program with STAN_THREADS (its precompiled header must be too)."""
    return stan_build.uses_threads(path.read_text())


def unused_header(compiler_output: str) -> str | None:
    """GCC's reason for not using the precompiled header (``-Winvalid-pch``), or None."""
    for line in compiler_output.splitlines():
        if "not used because" in line and ".gch" in line:
            return line.split("not used because", 1)[1].split("[-Winvalid-pch]")[0].strip()
    return None


def build(label: str) -> int:
    """Compile one program as the bundled Stan engine does (what the pool runs in each process); print the
    compiler's and stanc's messages, then one line."""
    import httpstan.cache

    path, program_isa, options = programs()[label]
    try:
        handle = HttpstanBackend().compile(path, program_isa, options)
    except RuntimeError as err:
        print(f"--- message:\n{err}\n{label}: failed")
        return 1
    messages = {
        "stanc_warnings": httpstan.cache.load_stanc_warnings(handle["model_name"]),
        "compiler_output": httpstan.cache.load_services_extension_module_compiler_output(handle["model_name"]),
    }
    for key, text in messages.items():
        if text:
            print(f"--- {key}:\n{text.rstrip()}")
    refused = unused_header(messages["compiler_output"] or "")
    note = f" (precompiled header NOT used: {refused})" if refused else ""
    seconds = handle["compile_s"]
    print(f"{label}: {'cached' if handle['cached'] else f'compiled in {seconds:.1f} s'}{note}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.precompile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", "-j", type=int, default=2, help="programs compiled at once (default: 2)")
    parser.add_argument("--log", type=Path, help="file for the compilers' output (default: the terminal)")
    parser.add_argument(
        "--no-zoo",
        dest="zoo",
        action="store_false",
        help="leave out the programs of models whose tests the zoo tier alone runs (tests/tiers.py): make test's",
    )
    parser.add_argument("--one", metavar="LABEL", help=argparse.SUPPRESS)  # one program, in this process
    args = parser.parse_args(argv)
    if args.one:
        return build(args.one)
    if args.log:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_text("")
    start = time.perf_counter()
    found = programs(args.zoo)
    if all_cached(found):  # one process per program only to say "cached" took ~20 s
        print(f"precompile: {len(found)} Stan programs in httpstan's cache already, none compiled", flush=True)
        return 0
    todo = {
        label: (path, program_isa, options)
        for label, (path, program_isa, options) in once_each(found).items()
        if not HttpstanBackend.cached(path, program_isa, options)
    }
    builds = [(program_isa, threads(path)) for path, program_isa, _ in todo.values()]
    for line in stan_build.prepare(builds, args.jobs, args.log):
        print(line, flush=True)
    longest_first = sorted(todo, key=lambda label: -todo[label][0].stat().st_size)  # as `stanjax run` orders them
    tasks = [(label, [WORKER_PYTHON, "-m", "tests.precompile", "--one", label]) for label in longest_first]
    code = compile_each(tasks, args.jobs, args.log)
    where = f"; compiler output in {args.log}" if args.log else ""
    outcome = "ready" if code == 0 else "NOT ALL compiled"
    print(
        f"precompile: {len(tasks)} Stan programs {outcome} in {time.perf_counter() - start:.0f} s, {args.jobs} at "
        f"once{where}",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
