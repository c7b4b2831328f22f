"""``stanjax run``: run a suite of (model, engine, repeat) jobs and append their records."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import models
from models import ROOT, UsageError
from runner import records, static_checks, superseded
from runner.campaign import interrupted, run_campaign
from runner.config import (CHAIN_METHODS, DEVICES, ISAS, MANY_CHAINS, SUPERCHAINS, Job, Placement, RunConfig,
                           RunKey, campaign_entropy)
from runner.engines import ENGINE_NAMES, JAX, STAN, entry
from runner.paths import cache_dir
from runner.suites import SUITES

LIMITS = {"chains": (1, 65_536), "warmup": (1, 1_000_000), "draws": (4, 1_000_000), "repeats": (1, 100)}


def _names(values: list[str] | None) -> list[str] | None:
    """Accept both ``--models a b`` and ``--models a,b``."""
    if values is None:
        return None
    return [name for value in values for name in value.split(",") if name]


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "run", help="run models on engines and append result records", description=DESCRIPTION)
    add_arguments(parser)
    parser.set_defaults(handler=main)


DESCRIPTION = ("Run each (model, engine, repeat) in its own process and append one JSON record per run to "
               "OUT/results.jsonl. Settings come from --suite; any option given here overrides the suite's value. "
               "Every engine runs NUTS with the same chains, warmup, draws, target acceptance and max tree depth; "
               "the data depend on --seed only, the sampler seed on --seed and the repeat. Runs go in paired "
               "blocks: repeat r of every engine is block r, run back to back, the engines' order alternating from "
               "block to block; a report takes ratios within blocks. A run measured while other processes kept "
               "the machine busy is kept, marked loaded, and run again (--reruns).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", default="quick", help=f"named settings: {', '.join(SUITES)} (default: %(default)s)")
    parser.add_argument("--models", nargs="+", metavar="ID", help="posterior IDs, or 'all' (default: the suite's, "
                        "or --model-dir's)")
    parser.add_argument("--model-dir", type=Path, metavar="DIR",
                        help="a folder of your own models laid out like this repository's (models/<id>.py, "
                        "stan/<model>.stan, jax_models/<model>.py): they join the models, and are the ones run "
                        "unless --models says otherwise")
    parser.add_argument("--engines", nargs="+", metavar="NAME", help=f"from {', '.join(ENGINE_NAMES)}")
    parser.add_argument("--size", help=f"data size preset: {', '.join(models.SIZE_NAMES)}")
    parser.add_argument("--chains", type=int, help="chains per run")
    parser.add_argument("--warmup", type=int, help="warmup iterations per chain")
    parser.add_argument("--draws", type=int, help="post-warmup draws per chain")
    parser.add_argument("--repeats", type=int, help="independent repeats of every (model, engine)")
    parser.add_argument("--device", choices=DEVICES,
                        help="where JAX engines run (default: the suite's, else cpu); Stan always runs on the CPU. "
                        "gpu with no GPU visible to JAX is an error, never a silent CPU fallback")
    parser.add_argument("--x64", action="store_true",
                        help="float64 on the GPU too (default there: float32; on the CPU always float64)")
    parser.add_argument("--chain-method", choices=CHAIN_METHODS,
                        help="how NumPyro runs chains: parallel (one device each; CPU default), vectorized "
                        "(one vmapped batch; GPU default) or sequential. BlackJAX engines always vectorise")
    parser.add_argument("--stan", choices=("auto", "bundled", "cmdstan"), default="auto",
                        help="the Stan front end: bundled (httpstan's NUTS, driven directly), cmdstan (CmdStan "
                        "through cmdstanpy; CMDSTAN or cmdstanpy's folder) or auto: CmdStan when one is "
                        "installed, else bundled. The record names the one that ran (default: %(default)s)")
    parser.add_argument("--isa", choices=ISAS, default="native",
                        help="the CPU instruction set both sides are built for: native (the host's: Stan with "
                        "-march=native, XLA's default) or x86-64-v2 (SSE4.2, no AVX, on both sides: Stan with "
                        "-march=x86-64-v2, XLA's CPU ISA capped at SSE4.2). The record states it "
                        "(default: %(default)s)")
    parser.add_argument("--reruns", type=int, default=int(os.environ.get("STANJAX_RERUNS", 2)), metavar="K",
                        help="times a run measured on a loaded machine (other processes kept more than a quarter "
                        "of a core busy) is run again in its block, after waiting for quiet; its loaded record is "
                        "kept, marked, and never enters a ratio (default: %(default)s; STANJAX_RERUNS sets it)")
    parser.add_argument("--quiet-wait", type=float, default=120.0, metavar="S",
                        help="seconds to wait for a quiet machine before the campaign and before each rerun; "
                        "after that it runs anyway, and a loaded run stays marked (default: %(default)s)")
    parser.add_argument("--cores", type=int, metavar="N",
                        help="CPU cores each run may use, the first N this process may run on (default: all of "
                        "them). Each worker is pinned to them: XLA's CPU threads for the JAX engines, Stan's "
                        "chains x threads per chain. The record states both")
    parser.add_argument("--threads-per-chain", type=int, metavar="T",
                        help="Stan: T threads per chain, each chain pinned to its own T cores, running the model's "
                        "reduce_sum program (stan/threaded/; models without one keep one thread). Default: with "
                        "CmdStan, cores // chains where that is 2 or more; with the bundled Stan, 1 (its forked "
                        "chains ran reduce_sum on one core: see the README's protocol)")
    parser.add_argument("--seed", type=int, default=1, help="data seed; sampler seeds derive from it and the repeat (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("out/results"), help="folder for results.jsonl and logs (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before one run is stopped (default: %(default)s)")
    parser.add_argument("--shard", type=shard_arg, metavar="I/N",
                        help="run only part I of N of the plan (a Slurm job array, a CI matrix: each machine its own "
                        "part into its own results folder; `stanjax report A B ...` merges them). Parts split by "
                        "model and size, so every engine and repeat of a model runs on one machine, where they "
                        "can be paired")
    parser.add_argument("--estimate", action="store_true",
                        help="run nothing: print how long each model's runs will take and the total, from the "
                        "records in results/ and OUT (this machine's where it has some), with what each estimate "
                        "rests on; with --resume, of what is left")
    parser.add_argument("--resume", action="store_true",
                        help="go on with the campaign in OUT: skip runs that already have an ok record there (same "
                        "model, engine, front end (for Stan: CmdStan or the bundled Stan), device, precision, chain "
                        "method, ISA, config hash and repeat; failed runs, and with --reruns above 0 loaded ones, are "
                        "run again), under the same campaign ID, so blocks pair across the interruption")


def shard_arg(text: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N."""
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N (e.g. 2/4), got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"I/N needs 1 <= I <= N, got {text}")
    return i, n


def shard(jobs: list[Job], part: int, parts: int) -> list[Job]:
    """Part ``part`` of ``parts``: the jobs of every parts-th (size, model) group, in the plan's order; the parts
    are disjoint and together the whole plan, on every machine that plans alike."""
    groups = list(dict.fromkeys((job.config.size, job.model_id) for job in jobs))
    mine = {group for index, group in enumerate(groups) if index % parts == part - 1}
    return [job for job in jobs if (job.config.size, job.model_id) in mine]


def parse(argv: list[str]) -> argparse.Namespace:
    """``stanjax run`` options from an argument list: other verbs (nightly) plan runs through the same options,
    defaults included."""
    parser = argparse.ArgumentParser(prog="stanjax run", description=DESCRIPTION)
    add_arguments(parser)
    return parser.parse_args(argv)


def plan(args) -> list[Job]:
    """Validate the options against the suite and registry; the jobs in run order."""
    if args.suite not in SUITES:
        raise models.UnknownChoice("suite", args.suite, SUITES)
    suite = SUITES[args.suite]
    settings = {key: getattr(args, key) if getattr(args, key) is not None else suite[key] for key in
                ("chains", "warmup", "draws", "repeats")}
    for key, (low, high) in LIMITS.items():
        if not low <= settings[key] <= high:
            raise UsageError(f"--{key} must be between {low} and {high}, got {settings[key]}")
    if not 0 <= args.reruns <= MAX_RERUNS:
        raise UsageError(f"--reruns must be between 0 and {MAX_RERUNS}, got {args.reruns}")
    if not (math.isfinite(args.quiet_wait) and args.quiet_wait >= 0):
        raise UsageError(f"--quiet-wait must be a number of seconds >= 0, got {args.quiet_wait:g}")
    check_seed_and_timeout(args.seed, args.timeout)
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
    placements = {engine: replace(placement(engine, device, args.x64, args.chain_method, settings["chains"]),
                                  isa=args.isa) for engine in engines}
    if settings["chains"] >= MANY_CHAINS and settings["chains"] % SUPERCHAINS:
        raise UsageError(f"--chains {settings['chains']}: from {MANY_CHAINS} chains on the chains start in "
                         f"{SUPERCHAINS} superchains (nested R-hat), so the count must be a multiple of {SUPERCHAINS}")
    front_ends = {engine: entry(engine).front_end(args.stan if entry(engine).family == STAN else "auto")
                  for engine in engines}
    # Refused before anything runs: an unknown size, sizes a generator refuses, non-finite data, a Stan program stanc
    # rejects, a pair whose data or parameters disagree (runner.static_checks).
    for spec in specs:
        for size in sizes:
            static_checks.require(spec, spec.data(size, args.seed))
    configs = [RunConfig(size=size, chains=settings["chains"], warmup=settings["warmup"],
                         draws=settings["draws"], seed=args.seed) for size in sizes]
    entropy = campaign_entropy()  # every engine of a repeat shares its sampler seed; campaigns never do
    return [Job(spec.id, engine, config.for_model(spec), repeat,
                with_threads(placements[engine], engine, front_ends[engine], spec, cores, config, threads),
                front_ends[engine], entropy, cores)
            for config in configs for spec in specs for repeat in range(settings["repeats"])
            for engine in block_order(engines, repeat)]


def block_order(engines: list[str], block: int) -> list[str]:
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
    if not 1 <= cores <= usable:
        raise UsageError(f"--cores must be between 1 and {usable} (the cores this process may run on), got {cores}")
    return cores


def check_threads(threads: int | None, cores: int, chains: int) -> int | None:
    """``--threads-per-chain``: chains x threads must fit the cores; None: the front end's default."""
    if threads is not None and not (threads >= 1 and chains * threads <= cores):
        raise UsageError(f"--threads-per-chain {threads} with {chains} chains needs {chains * threads} cores; "
                         f"the runs have {cores} (--cores)")
    return threads


def with_threads(chosen: Placement, engine: str, front_end: str, spec: models.ModelSpec, cores: int,
                 config: RunConfig, threads: int | None = None) -> Placement:
    """Stan's threads per chain: ``threads`` if given, else with CmdStan ``cores // chains`` (threads only where
    that is at least 2: otherwise the chains alone fill the cores), with the bundled Stan one (measured here: its
    forked chains ran reduce_sum on one core, so threads only added reduce_sum's overhead). More than one only
    for a model with a reduce_sum program. JAX engines: unchanged (XLA's threads are the worker's cores)."""
    if entry(engine).family != STAN or spec.stan_threaded_file is None:
        return chosen
    if threads is None:
        threads = cores // config.chains if front_end == "cmdstan" else 1
    return replace(chosen, threads_per_chain=threads) if threads >= 2 else chosen


MAX_PARALLEL_CPU_CHAINS = 64
MAX_RERUNS = 10
MAX_SEED = 2**32 - 1  # NumPy's and Stan's seeds are unsigned 32-bit


def check_seed_and_timeout(seed: int, timeout: float) -> None:
    """Every model checks its seed alike (models that ignore it too), and a timeout is a positive number."""
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be between 0 and {MAX_SEED}, got {seed}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout:g}")


def placement(engine: str, device: str, x64: bool, chain_method: str | None, chains: int) -> Placement:
    """The engine's device policy (the registry's), checked here: a GPU that is not there, or more parallel chains
    than devices, is an error."""
    chosen = entry(engine).placement(device, x64, chain_method)
    if chosen.device == "gpu":
        check_gpu_visible()
    if chosen.chain_method == "parallel" and chosen.device == "cpu" and chains > MAX_PARALLEL_CPU_CHAINS \
            and entry(engine).family == JAX:
        raise UsageError(f"--chain-method parallel gives each chain its own CPU device: at most "
                         f"{MAX_PARALLEL_CPU_CHAINS} chains, got {chains} (use --chain-method vectorized)")
    if chosen.chain_method == "parallel" and chosen.device == "gpu" and chains > gpu_count():
        raise UsageError(f"--chain-method parallel needs one GPU per chain: {chains} chains, {gpu_count()} "
                         "GPU(s) visible (use --chain-method vectorized)")
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


def check_gpu_visible(asked: str = "--device gpu") -> None:
    if gpu_count() == 0:
        raise UsageError(f"{asked}: JAX sees no GPU on this machine (install jax[cuda] and check "
                         "nvidia-smi); refusing to fall back to the CPU")


def done_keys(out: Path, clean: bool = False) -> set[RunKey]:
    """The runs ``out`` already holds an ok record of (``--resume`` skips them), less any a known bug superseded
    (results/SUPERSEDED: they are measured again); with ``clean``, only those measured on a quiet machine: a loaded
    run is done again, as a campaign with reruns does at once."""
    if not (out / records.RESULTS_FILE).exists():
        return set()
    entries = superseded.load()
    return records.done([r for r in records.read(out / records.RESULTS_FILE)
                         if (r.clean or not clean) and not superseded.reason(r, entries)])


def campaign_to_resume(out: Path) -> str | None:
    """The campaign ID of the newest record in ``out``: ``--resume`` goes on with that campaign, on the machine that
    made it (a block pairs runs of one machine, and a campaign's blocks are of one machine): a UsageError on
    another."""
    if not (out / records.RESULTS_FILE).exists():
        return None
    runs = records.read(out / records.RESULTS_FILE)
    if not runs:
        return None
    newest, here = max(runs, key=lambda r: r.created), records.machine().slug
    if newest.machine != here:
        raise UsageError(f"--resume: {out} is a campaign of {newest.machine} and this machine is {here}: resume it "
                         f"on {newest.machine}, or start this machine's own (--out results/{here}/...)")
    return newest.campaign_id


def main(args) -> int:
    jobs = plan(args)
    if args.shard:
        jobs = shard(jobs, *args.shard)
        print(f"shard {args.shard[0]}/{args.shard[1]}: {len(jobs)} runs")
    campaign_id = campaign_to_resume(args.out) if args.resume else None
    if args.resume:
        done = done_keys(args.out, clean=args.reruns > 0)
        left = [j for j in jobs if j.key() not in done]
        clean = " (clean: a loaded one is run again)" if args.reruns > 0 else ""
        print(f"resume: {len(jobs) - len(left)} of {len(jobs)} runs already recorded{clean}, {len(left)} to run")
        jobs = left
    if args.estimate:
        print(estimate_text(jobs, [folder for folder in (ROOT / "results", args.out) if folder.exists()]))
        return 0
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        probe = args.out / ".write-test"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise UsageError(f"cannot write results to {args.out}: {err.strerror}") from None
    written: list[records.RunRecord] = []
    try:
        rerun = run_campaign(jobs, args.out, args.timeout, written, reruns=args.reruns,
                             quiet_wait_s=args.quiet_wait, campaign_id=campaign_id)
    except KeyboardInterrupt as stop:
        return interrupted(stop, written, jobs, args.out)
    print(campaign_summary(written, rerun, args.out))
    return 1 if any(r.status != "ok" for r in written) else 0


def estimate_text(jobs: list[Job], history: list[Path]) -> str:
    """Per model and size: its runs' estimated seconds and what the estimates rest on; then the total."""
    from runner.estimates import Estimator

    estimate = Estimator(records.read(history) if history else [], machine=records.machine().slug)
    per_model: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for job in jobs:
        per_model.setdefault((job.model_id, job.config.size), []).append(estimate(job))
    lines = [f"{model_id} ({size}): {len(found)} runs, ~{minutes(sum(s for s, _ in found))} "
             f"({'; '.join(sorted({basis for _, basis in found}))})" for (model_id, size), found in per_model.items()]
    total = sum(s for found in per_model.values() for s, _ in found)
    return "\n".join([*lines, f"total: {len(jobs)} runs, ~{minutes(total)} of machine time (compiles not counted)"])


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds // 3600:.0f} h {seconds % 3600 / 60:.0f} min"


def campaign_summary(written: list[records.RunRecord], rerun: list[str], out: Path) -> str:
    """What a campaign did, in a few lines: runs ok and valid, runs rerun and why, runs still loaded."""
    final = {}
    for r in written:  # the last record of each run: a rerun's replaces its loaded one
        final[r.key()] = r
    failed = [r for r in final.values() if r.status != "ok"]
    invalid = [r for r in final.values() if r.status == "ok" and not r.valid]
    still_loaded = [r for r in final.values() if r.load and r.load.loaded]
    lines = [f"{len(final) - len(failed)} of {len(final)} runs ok ({len(invalid)} failed a validity gate); "
             f"records in {out}"]
    if rerun:
        lines.append(f"{len(rerun)} run(s) rerun after a loaded measurement (kept in the records, marked loaded):")
        lines += [f"  {why}" for why in rerun]
    if still_loaded:
        lines.append(f"{len(still_loaded)} run(s) still loaded after their reruns: their blocks are incomplete and "
                     "enter no ratio")
    return "\n".join(lines)
