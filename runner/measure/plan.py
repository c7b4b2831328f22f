"""Planning runs: a request (the options of ``stanjax run``, or of the API) checked against the suites, the
registry and this machine, and turned into jobs in run order, paired blocks alternating the engines' order (what
a campaign folder already holds, for ``--resume``, is :mod:`stanjax.runner.measure.resume`'s). Every check here is
a one-line UsageError before anything runs."""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Literal

from stanjax import models
from stanjax.models import UsageError, option
from stanjax.runner.core.config import (
    CHAIN_METHODS,
    DEVICES,
    ISAS,
    MANY_CHAINS,
    STAN_FRONT_ENDS,
    STAN_PROGRAMS,
    SUPERCHAINS,
    Job,
    Placement,
    RunConfig,
    campaign_entropy,
    is_expert,
)
from stanjax.runner.core.engine_registry import JAX, STAN, entry
from stanjax.runner.core.paths import cache_dir
from stanjax.runner.measure import static_checks
from stanjax.runner.measure.suites import SUITES, Suite


@dataclass(frozen=True)
class Request:
    """What to run: the options of ``stanjax run`` (the CLI's namespace has the same names) with their defaults.
    None takes the suite's value (chains, warmup, draws, repeats, sizes, models, engines, device)."""

    suite: str = "quick"
    models: list[str] | None = None
    model_dir: Path | None = None
    engines: list[str] | None = None
    size: str | None = None
    chains: int | None = None
    warmup: int | None = None
    draws: int | None = None
    repeats: int | None = None
    device: str | None = None
    x64: bool = False
    chain_method: str | None = None
    stan: str = "auto"
    isa: str = "native"
    stan_programs: list[str] | None = None  # names of STAN_PROGRAMS; None: the model's own only
    reruns: int = 0
    quiet_wait: float = 120.0
    cores: int | None = None
    threads_per_chain: int | None = None
    seed: int = 1
    timeout: float = 3600.0


# The suite settings a request may override, as literals so that a Suite can be indexed by them.
SETTINGS: tuple[Literal["chains", "warmup", "draws", "repeats"], ...] = ("chains", "warmup", "draws", "repeats")
LIMITS = {"chains": (1, 65_536), "warmup": (1, 1_000_000), "draws": (4, 1_000_000), "repeats": (1, 100)}


def _names(values: list[str] | None) -> list[str] | None:
    """Accept both ``--models a b`` and ``--models a,b``."""
    if values is None:
        return None
    return [name for value in values for name in value.split(",") if name]


def shard(jobs: list[Job], part: int, parts: int) -> list[Job]:
    """Part ``part`` of ``parts``: the jobs of every parts-th (size, model) group, in the plan's order; the parts
    are disjoint and together the whole plan, on every machine that plans alike."""
    groups = list(dict.fromkeys((job.config.size, job.model_id) for job in jobs))
    mine = {group for index, group in enumerate(groups) if index % parts == part - 1}
    return [job for job in jobs if (job.config.size, job.model_id) in mine]


def plan(args: Request) -> list[Job]:
    """Validate the request (a Request, or the CLI's namespace of the same names) against the suite, the registry
    and this machine; the jobs in run order."""
    if args.suite not in SUITES:
        raise models.UnknownChoice("suite", args.suite, SUITES)
    suite = SUITES[args.suite]
    settings = checked_settings(args, suite)
    cores = check_cores(args.cores)
    threads = check_threads(args.threads_per_chain, cores, settings["chains"])
    cache_dir()  # an uncreatable STANJAX_CACHE: one line now, not a traceback inside a worker
    sizes = [args.size] if args.size else suite["sizes"]
    own = models.add_model_dir(args.model_dir) if args.model_dir else []
    model_ids = _names(args.models) or own or suite["models"]
    if model_ids in (["all"], "all"):
        model_ids = list(models.registry())
    specs = [models.get(model_id) for model_id in model_ids]
    engines = _names(args.engines) or list(suite["engines"])
    for engine in engines:
        entry(engine)  # unknown engine: one line, exit 2
    device = args.device or suite.get("device", "cpu")
    check_choices(args, device)
    placements = {
        engine: replace(placement(engine, device, args.x64, args.chain_method, settings["chains"]), isa=args.isa)
        for engine in engines
    }
    if settings["chains"] >= MANY_CHAINS and settings["chains"] % SUPERCHAINS:
        raise UsageError(
            f"{option('chains', settings['chains'])}: from {MANY_CHAINS} chains on the chains start in "
            f"{SUPERCHAINS} superchains (nested R-hat), so the count must be a multiple of {SUPERCHAINS}"
        )
    front_ends = stan_front_ends(args.stan, engines)
    programs = stan_programs(_names(args.stan_programs), specs, engines)
    # Refused before anything runs: an unknown size, sizes a generator refuses, non-finite data, a Stan program stanc
    # rejects, a pair whose data or parameters disagree (runner.measure.static_checks).
    for spec in specs:
        for size in sizes:
            static_checks.require(spec, spec.data(size, settings["seed"]))
    configs = [
        RunConfig(
            size=size,
            chains=settings["chains"],
            warmup=settings["warmup"],
            draws=settings["draws"],
            seed=settings["seed"],
        )
        for size in sizes
    ]
    entropy = campaign_entropy()  # every engine of a repeat shares its sampler seed; campaigns never do
    return [
        Job(
            spec.id,
            engine,
            config.for_model(spec),
            repeat,
            with_threads(replace(placements[engine], program=program), engine, front_end, spec, cores, config, threads),
            front_end,
            entropy,
            cores,
        )
        for config in configs
        for spec in specs
        for repeat in range(settings["repeats"])
        for engine, program, front_end in block_order(setups(engines, programs, spec, front_ends), repeat)
    ]


def checked_settings(args: Request, suite: Suite) -> dict[str, int]:
    """The suite's chains, warmup, draws and repeats with the request's overrides, and the seed, as ints; the
    request's other numbers checked too: one line for the first out of its range."""
    settings: dict[str, int] = {
        key: whole(key, suite[key] if getattr(args, key) is None else getattr(args, key)) for key in SETTINGS
    }
    for key, (low, high) in LIMITS.items():
        if not low <= settings[key] <= high:
            raise UsageError(f"{option(key)} must be between {low} and {high}, got {settings[key]}")
    if not 0 <= whole("reruns", args.reruns) <= MAX_RERUNS:
        raise UsageError(f"{option('reruns')} must be between 0 and {MAX_RERUNS}, got {args.reruns}")
    if not (seconds(args.quiet_wait) and args.quiet_wait >= 0):
        raise UsageError(f"{option('quiet-wait')} must be a number of seconds >= 0, got {shown(args.quiet_wait)}")
    return {**settings, "seed": check_seed_and_timeout(args.seed, args.timeout)}


def whole(name: str, value) -> int:
    """An integer option as an int (NumPy's integers too), or one line naming it: a float or a string would reach
    a record's settings and their hash."""
    try:
        return operator.index(value)
    except TypeError:
        raise UsageError(f"{option(name)} must be a whole number, got {value!r}") from None


def seconds(value) -> bool:
    return isinstance(value, numbers.Real) and math.isfinite(value)


def shown(value) -> str:
    """A number as the command line typed it (``5``, ``nan``); anything else as Python writes it."""
    return f"{value:g}" if isinstance(value, numbers.Real) else repr(value)


def check_choices(args: Request, device: str) -> None:
    """The choices the command line's parser holds to, for any request: an unknown device would become the
    engine's first, an unknown chain method its default, silently."""
    for kind, value, choices in (
        ("device", device, DEVICES),
        ("chain method", args.chain_method or CHAIN_METHODS[0], CHAIN_METHODS),
        ("ISA", args.isa, ISAS),
        *(("Stan front end", name, STAN_FRONT_ENDS) for name in _names([args.stan]) or ["auto"]),
    ):
        if value not in choices:
            raise models.UnknownChoice(kind, value, choices)


def stan_front_ends(stan: str, engines: list[str]) -> dict[str, list[str]]:
    """Each engine's front ends: ``--stan``'s (one, or several: "bundled,cmdstan" runs Stan's NUTS through both in
    every block) for the engines Stan's front ends run (its NUTS, its approximations), "auto" resolved; its default
    for the others (nutpie_stan: BridgeStan)."""
    names = _names([stan]) or ["auto"]
    if len(names) > 1 and "auto" in names:
        raise UsageError(f"{option('stan', stan)}: 'auto' is one front end or the other; name them instead")
    return {
        engine: list(
            dict.fromkeys(
                entry(engine).front_end(name)
                for name in (names if set(entry(engine).front_ends) & set(STAN_FRONT_ENDS) else ["auto"])
            )
        )
        for engine in engines
    }


def stan_programs(names: list[str] | None, specs: list[models.ModelSpec], engines: list[str]) -> list[str]:
    """``--stan-programs``: the Placement.program of each name, checked: a known name, a Stan sampler among the
    engines, and, asked for expert programs alone, every model has one."""
    if not names:
        return [""]
    for name in names:
        if name not in STAN_PROGRAMS:
            raise models.UnknownChoice("Stan program", name, STAN_PROGRAMS)
    if not any(entry(engine).family == STAN and not entry(engine).approximate for engine in engines):
        raise UsageError(f"{option('stan-programs')} chooses Stan's programs, but no Stan sampler is among the engines")
    programs = list(dict.fromkeys(STAN_PROGRAMS[name] for name in names))
    without = [spec.id for spec in specs if spec.stan_expert_file is None]
    if all(is_expert(program) for program in programs) and without:
        having = [spec_id for spec_id in models.registry() if models.get(spec_id).stan_expert_file]
        raise UsageError(
            f"{without[0]} has no expert Stan program (stan/expert/); models with one: {', '.join(having) or 'none'}"
        )
    return programs


def setups(
    engines: list[str], programs: list[str], spec: models.ModelSpec, front_ends: dict[str, list[str]]
) -> list[tuple[str, str, str]]:
    """Each engine with each Stan program it runs on ``spec`` and each front end it runs through: a Stan sampler
    once per program the model has (its expert rewrite only where there is one) and front end, every other engine
    once."""
    return [
        (engine, program, front_end)
        for engine in engines
        for program in (
            [p for p in programs if not is_expert(p) or spec.stan_expert_file]
            if entry(engine).family == STAN and not entry(engine).approximate
            else [""]
        )
        for front_end in front_ends[engine]
    ]


def block_order[T](engines: Sequence[T], block: int) -> list[T]:
    """The engines' order in a block: as given in even blocks, reversed in odd ones, so neither side always
    runs first (a warm cache, a CPU still clocked up from the run before)."""
    return list(engines) if block % 2 == 0 else list(reversed(engines))


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def check_cores(cores: int | None) -> int:
    """``--cores``: between 1 and the cores this process may run on; None: all of them."""
    usable = len(usable_cores())
    if cores is None:
        return usable
    if not 1 <= whole("cores", cores) <= usable:
        raise UsageError(
            f"{option('cores')} must be between 1 and {usable} (the cores this process may run on), got {cores}"
        )
    return int(cores)


def check_threads(threads: int | None, cores: int, chains: int) -> int | None:
    """``--threads-per-chain``: at least 1, and chains x threads must fit the cores; None: the front end's default."""
    if threads is not None and whole("threads-per-chain", threads) < 1:
        raise UsageError(f"{option('threads-per-chain')} must be at least 1, got {threads}")
    if threads is not None and chains * threads > cores:
        raise UsageError(
            f"{option('threads-per-chain', threads)} with {chains} chains needs {chains * threads} cores; "
            f"the runs have {cores} ({option('cores')})"
        )
    return None if threads is None else int(threads)


def with_threads(
    chosen: Placement,
    engine: str,
    front_end: str,
    spec: models.ModelSpec,
    cores: int,
    config: RunConfig,
    threads: int | None = None,
) -> Placement:
    """Stan's threads per chain: ``threads`` if given, else with CmdStan ``cores // chains`` (threads only where
    that is at least 2: otherwise the chains alone fill the cores), with the bundled Stan one (measured here: its
    forked chains ran reduce_sum on one core, so threads only added reduce_sum's overhead). More than one only
    for a model with a reduce_sum program. Unchanged: JAX engines (XLA's threads are the worker's cores), Stan's
    approximations (the plain program; Pathfinder threads its paths) and nutpie_stan (its chains are threads of one
    process, each on a core)."""
    if engine != "stan" or spec.stan_threaded_file is None:
        return chosen
    if threads is None:
        threads = cores // config.chains if front_end == "cmdstan" else 1
    return replace(chosen, threads_per_chain=threads) if threads >= 2 else chosen


MAX_PARALLEL_CPU_CHAINS = 64
MAX_RERUNS = 10
MAX_SEED = 2**32 - 1  # NumPy's and Stan's seeds are unsigned 32-bit


def check_seed_and_timeout(seed: int, timeout: float) -> int:
    """Every model checks its seed alike (models that ignore it too), and a timeout is a positive number; the
    seed as an int."""
    if not 0 <= whole("seed", seed) <= MAX_SEED:
        raise UsageError(f"{option('seed')} must be between 0 and {MAX_SEED}, got {seed}")
    if not (seconds(timeout) and timeout > 0):
        raise UsageError(f"{option('timeout')} must be a positive number of seconds, got {shown(timeout)}")
    return int(seed)


def placement(engine: str, device: str, x64: bool, chain_method: str | None, chains: int) -> Placement:
    """The engine's device policy (the registry's), checked here: a GPU that is not there, or more parallel chains
    than devices, is an error."""
    chosen = entry(engine).placement(device, x64, chain_method)
    if chosen.device == "gpu":
        check_gpu_visible()
    if (
        chosen.chain_method == "parallel"
        and chosen.device == "cpu"
        and chains > MAX_PARALLEL_CPU_CHAINS
        and entry(engine).family == JAX
    ):
        raise UsageError(
            f"{option('chain-method', 'parallel')} gives each chain its own CPU device: at most "
            f"{MAX_PARALLEL_CPU_CHAINS} chains, got {chains} (use {option('chain-method', 'vectorized')})"
        )
    if chosen.chain_method == "parallel" and chosen.device == "gpu" and chains > gpu_count():
        raise UsageError(
            f"{option('chain-method', 'parallel')} needs one GPU per chain: {chains} chains, {gpu_count()} "
            f"GPU(s) visible (use {option('chain-method', 'vectorized')})"
        )
    return chosen


# What JAX says when it has no GPU platform at all (a CPU-only jaxlib, or no CUDA plugin): "no GPU", not a failure.
NO_GPU_PLATFORM = ("Unknown backend", "no platforms that are instances of gpu", "Backend 'gpu' is not in the list")
GPU_PROBE = """import json
try:
    import jax
    print(json.dumps({"gpus": len(jax.devices('gpu'))}))
except RuntimeError as err:
    print(json.dumps({"error": str(err)}))
"""


@cache
def gpu_count() -> int:
    """GPUs JAX can see, asked in a child process (a backend started here would hold GPU memory the workers need).
    0 when JAX has no GPU platform; a GPU platform that fails to start (a broken CUDA install), or a probe that
    crashes, is a UsageError that says what failed, never a silent "no GPU"."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    done = subprocess.run([sys.executable, "-c", GPU_PROBE], capture_output=True, text=True, env=env)
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}, no output"])[-1]
        raise UsageError(f"probing JAX's GPUs failed: {last}") from None
    if "gpus" in answer:
        return answer["gpus"]
    if any(text in answer["error"] for text in NO_GPU_PLATFORM):
        return 0
    raise UsageError(f"JAX's GPU platform failed to start: {answer['error'].splitlines()[0]}")


def check_gpu_visible(asked: str | None = None) -> None:
    """A GPU asked for (``--device gpu``, or what ``asked`` names) where JAX sees none: one line."""
    if gpu_count() == 0:
        raise UsageError(
            f"{asked or option('device', 'gpu')}: JAX sees no GPU on this machine (install jax[cuda] and check "
            "nvidia-smi); refusing to fall back to the CPU"
        )
