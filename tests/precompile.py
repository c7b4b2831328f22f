"""Compile every Stan program the tests build, before the tests, ``--jobs`` at once (``make test`` runs this).

The programs: every model's ``stan/*.stan``, its ``stan/threaded/*.stan`` and ``stan/expert/*.stan`` where it has
them, and the worked examples' programs (``examples/*/stan/*.stan``, which tests/pairing/test_check.py builds), each
built for the host's ISA (``-march=native``, the runs' default), and eight schools for x86-64-v2 too (the ISA tests
build both). Each is
built as the bundled Stan engine builds it (``HttpstanBackend.compile``), under the workers' interpreter:
httpstan's cache is keyed by the program's text (with the flags' comment) and the interpreter's path, so the tests
then find every program in the cache and compile nothing. One line per program compiled (one line in all when
every program is in the cache already); the compilers' messages go to ``--log``.

Most of a Stan compile is parsing Stan's headers, the same for every program, so (as CmdStan does by default with
g++) Stan's model header is compiled once into a precompiled header under ``out/pch/`` (twice, at once: with
STAN_THREADS for the programs that run threads, without for the rest), which each program's compile then reads
(``-include``), without debug information (``-g0``: the tests never debug a module). Neither changes
the code the compiler generates; a header the compiler refuses (other flags, e.g. the x86-64-v2 build) is said on
the program's line.

    .venv/bin/python -m tests.precompile --jobs 2 --log out/test-compile.log
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
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

PCH_ROOT = ROOT / "out" / "pch"
# httpstan's default extra arguments for a model's module (httpstan/models.py, build_services_extension_module):
# the precompiled header must be built with the same ones, and the same macros (``macro_args``), to be used.
HTTPSTAN_ARGS = stan_build.HTTPSTAN_ARGS.split()
NO_DEBUG_INFO = "-g0"
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


def macro_args(with_threads: bool) -> list[str]:
    """The bundled Stan's macros for a build with or without STAN_THREADS, as compiler arguments."""
    return [f"-D{name}" if value is None else f"-D{name}={value}" for name, value in stan_build.macros(with_threads)]


def header_command(header: Path, with_threads: bool) -> list[str]:
    """The command that precompiles ``header``: the C++ compiler and flags setuptools gives httpstan's build
    (Python's own, with ``-g0`` and the bundled build's flags for the host appended as the programs' compiles get
    them), the build's macros and httpstan's arguments."""
    import httpstan
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler, get_python_inc

    compiler = new_compiler()
    customize_compiler(compiler)
    includes = [f"-I{Path(httpstan.__file__).parent / 'include'}", f"-I{get_python_inc()}"]
    return [
        *compiler.compiler_so_cxx,
        NO_DEBUG_INFO,
        *stan_build.flags("native").split(),
        *macro_args(with_threads),
        *includes,
        *HTTPSTAN_ARGS,
        "-x",
        "c++-header",
        str(header),
        "-o",
        f"{header}.gch",
    ]


def precompiled_header(with_threads: bool) -> tuple[Path, subprocess.Popen] | Path:
    """Stan's model header for builds with or without STAN_THREADS, precompiled under ``out/pch/<key>/`` (key: the
    compile command and the compiler's version), built once and reused: its path, with the compiler still running
    where it is being built (``header_ready`` waits for it)."""
    probe = header_command(Path("stan_model_header.hpp"), with_threads)
    compiler_version = subprocess.run([probe[0], "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256("\n".join([*probe, compiler_version]).encode()).hexdigest()[:12]
    header = PCH_ROOT / key / "stan_model_header.hpp"
    if Path(f"{header}.gch").exists():
        print(f"precompiled header: reused {header}.gch", flush=True)
        return header
    shutil.rmtree(header.parent, ignore_errors=True)
    header.parent.mkdir(parents=True)
    header.write_text("#include <stan/model/model_header.hpp>\n")
    command = header_command(header, with_threads)
    return header, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def header_ready(building: tuple[Path, subprocess.Popen] | Path, start: float, with_threads: bool) -> Path | None:
    """The precompiled header once built, or None where it failed (its programs compile without it)."""
    if isinstance(building, Path):
        return building
    header, compiler = building
    output = compiler.communicate()[0]
    if compiler.returncode != 0:
        shutil.rmtree(header.parent, ignore_errors=True)
        print(
            f"precompiled header: failed (exit {compiler.returncode}), programs compile without it:\n{output[-2000:]}",
            file=sys.stderr,
            flush=True,
        )
        return None
    kind = "with" if with_threads else "without"
    print(f"precompiled header ({kind} STAN_THREADS): built in {time.perf_counter() - start:.0f} s", flush=True)
    return header


def headers() -> dict[bool, Path | None]:
    """Per STAN_THREADS or not, as the programs need, Stan's model header precompiled (both at once); the headers of
    other keys (~0.8 GB each) are removed."""
    start = time.perf_counter()
    wanted = sorted({threads(path) for path, _, _ in programs().values()})
    building = {with_threads: precompiled_header(with_threads) for with_threads in wanted}
    ready = {
        with_threads: header_ready(being_built, start, with_threads) for with_threads, being_built in building.items()
    }
    kept = {header.parent for header in ready.values() if header}
    for folder in PCH_ROOT.iterdir():
        if folder not in kept:
            shutil.rmtree(folder, ignore_errors=True)
    return ready


def unused_header(compiler_output: str) -> str | None:
    """GCC's reason for not using the precompiled header (``-Winvalid-pch``), or None."""
    for line in compiler_output.splitlines():
        if "not used because" in line and ".gch" in line:
            return line.split("not used because", 1)[1].split("[-Winvalid-pch]")[0].strip()
    return None


def build(label: str, header: str | None) -> int:
    """Compile one program as the bundled Stan engine does (what the pool runs in each process), reading the
    precompiled ``header`` where given; print the compiler's and stanc's messages, then one line."""
    import httpstan.cache

    path, program_isa, options = programs()[label]
    if header:  # setuptools appends CPPFLAGS to each program's compile (and link) command
        extra = f"{NO_DEBUG_INFO} -Winvalid-pch -include {header}"
        os.environ["CPPFLAGS"] = f"{os.environ['CPPFLAGS']} {extra}" if os.environ.get("CPPFLAGS") else extra
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


def header_argument(header: Path | None) -> list[str]:
    return ["--header", str(header)] if header else []


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
    parser.add_argument("--header", help=argparse.SUPPRESS)  # the precompiled header --one reads
    args = parser.parse_args(argv)
    if args.one:
        return build(args.one, args.header)
    if args.log:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_text("")
    start = time.perf_counter()
    found = programs(args.zoo)
    if all_cached(found):  # one process per program only to say "cached" took ~20 s
        print(f"precompile: {len(found)} Stan programs in httpstan's cache already, none compiled", flush=True)
        return 0
    for build_isa, with_threads in sorted({(program_isa, threads(path)) for path, program_isa, _ in found.values()}):
        stan_build.services_folder(stan_build.flags(build_isa), with_threads)  # before the programs that link it
    header = headers()
    tasks = [
        (label, [WORKER_PYTHON, "-m", "tests.precompile", "--one", label, *header_argument(header[threads(path)])])
        for label, (path, _, _) in once_each(found).items()
    ]
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
