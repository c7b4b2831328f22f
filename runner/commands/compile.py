"""``stanjax compile``: build every Stan program ahead of time (the Docker image does this at build time, so a
run measures sampling, not first-time compilation).

A Stan compile is one single-threaded C++ compiler run, so ``--jobs N`` compiles N programs at once, each in its own
process (``python -m stanjax.runner.commands.compile ID``, under the workers' interpreter: httpstan's cache key includes
the interpreter's path). ``tests/precompile.py`` uses the same pool before the test suite."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from pathlib import Path

from stanjax import models
from stanjax.models import ROOT, UsageError
from stanjax.runner.core.config import Job, Placement, stanc_options
from stanjax.runner.core.engine_registry import STAN, entry
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.measure import plan
from stanjax.runner.measure.jobs import WORKER_PYTHON

FAILURE_TAIL_LINES = 20


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "compile",
        help="compile the Stan programs ahead of time",
        description="Compile the Stan program of each model with the Stan engine that runs would use (bundled "
        "Stan, or CmdStan when one is found) into its cache; already compiled ones are skipped.",
    )
    parser.add_argument("--models", nargs="+", metavar="ID", help="posterior IDs (default: all)")
    parser.add_argument(
        "--stan-programs",
        nargs="+",
        metavar="NAME",
        help="which of each model's Stan programs, as `stanjax run` names them: model, expert (where the model has "
        "one), model-O1, expert-O1 (translated with stanc's optimiser). Default: model",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        metavar="N",
        help="compile N programs at once, each in its own process (default: %(default)s; "
        "each compile is one single-threaded C++ compiler, so up to one per core)",
    )
    parser.set_defaults(handler=main)


def main(args) -> int:
    ids = args.models or list(models.registry())
    specs = [models.get(model_id) for model_id in ids]  # an unknown ID is bad input before anything compiles
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    programs = plan.stan_programs(plan._names(args.stan_programs), specs, ["stan"])
    asked: dict[str, list[str]] = {}  # program -> the models that have it
    for spec in specs:
        for _, program, _ in plan.setups(["stan"], programs, spec, {"stan": ["auto"]}):
            asked.setdefault(program, []).append(spec.id)
    tasks = [
        (label(m, Placement(program=program)), model_command(m, program=program))
        for program, ids in asked.items()
        for m in ids
    ]
    if args.jobs > 1 and len(tasks) > 1:
        if entry(STAN).front_end() == "bundled":
            prepare(
                missing([(m, Placement(program=program)) for program, ids in asked.items() for m in ids]), args.jobs
            )
        return compile_each(tasks, args.jobs)
    if Path(sys.executable) != Path(WORKER_PYTHON):
        # httpstan's cache key includes the interpreter's path: compile under the one the workers run.
        return max(subprocess.run(model_command(*ids, program=program)).returncode for program, ids in asked.items())
    return max(compile_models(ids, Placement(program=program)) for program, ids in asked.items())


def label(model_id: str, placement: Placement = Placement()) -> str:
    """How a compiled program is named in the lines: the model, then what differs from its own program's build
    for the host: which program, the ISA, the threads a chain."""
    parts = [f"{placement.program} program"] * bool(placement.program)
    parts += [placement.isa] * (placement.isa != "native")
    parts += [f"{placement.threads_per_chain} threads"] * (placement.threads_per_chain > 1)
    return f"{model_id} ({', '.join(parts)})" if parts else model_id


def programs_for(jobs: Iterable[Job]) -> list[tuple[str, Placement]]:
    """Each program the bundled Stan builds for these runs, once (not per block): the model and the placement
    that builds it (ISA, threads a chain, which of its programs). Runs through CmdStan or BridgeStan build their
    own."""
    wanted = {
        (job.model_id, job.placement.isa, job.placement.threads_per_chain, job.placement.program)
        for job in jobs
        if job.front_end == "bundled"
    }
    return [
        (model_id, Placement(isa=isa, threads_per_chain=threads, program=program))
        for model_id, isa, threads, program in sorted(wanted)
    ]


def cached(model_id: str, placement: Placement) -> bool:
    """Whether httpstan's cache holds the program as ``placement`` builds it, asked in this process: a process
    per program only to say "cached" took ~1 s each (38 programs: 33 s). False where this interpreter is not the
    workers' (httpstan's cache key includes the interpreter's path): the workers' own process then answers."""
    from stanjax.runner.engines import stan

    if Path(sys.executable) != Path(WORKER_PYTHON):
        return False
    program = stan.program(models.get(model_id), placement)
    return HttpstanBackend.cached(program, placement.isa, stanc_options(placement.program))


def prepare(programs: list[tuple[str, Placement]], at_once: int, log: Path | None = None) -> None:
    """Before these programs compile, ``at_once`` at a time: what they share (``stan_build.prepare``: the services
    objects, a precompiled header per build two or more share), a line each; the compilers' messages to ``log``
    where given."""
    from stanjax.runner.engines import stan

    builds = [
        (placement.isa, stan_build.uses_threads(stan.program(models.get(model_id), placement).read_text()))
        for model_id, placement in programs
    ]
    for line in stan_build.prepare(builds, at_once, log):
        print(line, flush=True)


def tasks_for(programs: list[tuple[str, Placement]]) -> list[tuple[str, list[str]]]:
    """``compile_each``'s tasks for the programs not in httpstan's cache yet: a label and the command each, the
    longest program first (its text's length guesses its compile time): the quick suite's longest, compiled last
    and alone, had kept a core idle for 12 s."""
    todo = sorted(missing(programs), key=lambda item: -program_length(*item))
    return [
        (
            label(model_id, placement),
            model_command(model_id, isa=placement.isa, threads=placement.threads_per_chain, program=placement.program),
        )
        for model_id, placement in todo
    ]


def program_length(model_id: str, placement: Placement) -> int:
    """The length of the program's text; 0 where the model has no such program (its compile then says so)."""
    from stanjax.runner.engines import stan

    try:
        return stan.program(models.get(model_id), placement).stat().st_size
    except UsageError:
        return 0


def missing(programs: list[tuple[str, Placement]]) -> list[tuple[str, Placement]]:
    """The programs httpstan's cache does not hold yet."""
    return [(model_id, placement) for model_id, placement in programs if not cached(model_id, placement)]


def model_command(*model_ids: str, isa: str = "native", threads: int = 1, program: str = "") -> list[str]:
    """The command that compiles these models in a process of their own, under the workers' interpreter, as a run
    on ``isa`` with ``threads`` per chain and ``program`` (``Placement.program``) builds them (threads > 1: the
    reduce_sum program)."""
    options = [f"--isa={isa}", f"--threads={threads}", f"--program={program}"]
    return [WORKER_PYTHON, "-m", "stanjax.runner.commands.compile", *options, *model_ids]


def compile_models(model_ids: list[str], placement: Placement = Placement()) -> int:
    """Compile one model after another in this process, one line each."""
    from stanjax.runner.core.engine_registry import get_engine

    engine = get_engine("stan")
    for model_id in model_ids:
        handle = engine.compile(models.get(model_id), placement)
        how = "cached" if handle["cached"] else f"compiled in {handle['compile_s']:.1f} s"
        print(f"{label(model_id, placement)}: {how}", flush=True)
    return 0


def compile_each(tasks: list[tuple[str, list[str]]], jobs: int, log: Path | None = None) -> int:
    """Run each ``(label, command)``, ``jobs`` at once, each in its own process (in the checkout's root). As each
    ends, print its last line of output (one line per program), or on failure its exit code and last lines;
    with ``log``, every command's whole output (the compiler's messages) goes there instead of the terminal.
    Returns 1 if any failed, else 0."""

    def run(command: list[str]) -> tuple[subprocess.CompletedProcess, float]:
        start = time.perf_counter()
        done = subprocess.run(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        return done, time.perf_counter() - start

    failed = []
    with ThreadPoolExecutor(max_workers=jobs) as pool, open(log, "a") if log else nullcontext() as log_file:
        futures = {pool.submit(run, command): (label, command) for label, command in tasks}
        for future in as_completed(futures):
            label, command = futures[future]
            done, seconds = future.result()
            lines = done.stdout.rstrip().splitlines()
            if log_file:
                log_file.write(
                    f"==> {label}: exit {done.returncode} after {seconds:.1f} s: {shlex.join(command)}\n"
                    f"{done.stdout.rstrip()}\n\n"
                )
                log_file.flush()
            if done.returncode == 0:
                print(lines[-1] if lines else f"{label}: done in {seconds:.1f} s", flush=True)
                continue
            failed.append(label)
            tail = "\n".join(f"    {line}" for line in lines[-FAILURE_TAIL_LINES:])
            where = f" (whole output in {log})" if log else ""
            print(
                f"{label}: FAILED, exit {done.returncode} after {seconds:.1f} s{where}:\n{tail}",
                file=sys.stderr,
                flush=True,
            )
    if failed:
        print(f"{len(failed)} of {len(tasks)} failed to compile: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def parse_model_command(argv: list[str]) -> tuple[list[str], Placement]:
    """``model_command``'s arguments back: the model IDs and the placement they are built for."""
    options = dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--"))
    placement = Placement(
        isa=options.get("isa", "native"),
        threads_per_chain=int(options.get("threads", 1)),
        program=options.get("program", ""),
    )
    return [arg for arg in argv if not arg.startswith("--")], placement


if __name__ == "__main__":  # model_command's process: these models, one after another, in this process
    sys.exit(compile_models(*parse_model_command(sys.argv[1:])))
