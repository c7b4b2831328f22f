"""``stanjax run``: run a suite of (model, engine, repeat) jobs and append their records."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import models
from models import UsageError
from runner import records
from runner.campaign import run_campaign
from runner.config import CHAIN_METHODS, DEVICES, Job, Placement, RunConfig
from runner.engines import ENGINE_NAMES, JAX_ENGINES
from runner.suites import SUITES

LIMITS = {"chains": (1, 65_536), "warmup": (1, 1_000_000), "draws": (4, 1_000_000), "repeats": (1, 100)}


def _names(values: list[str] | None) -> list[str] | None:
    """Accept both ``--models a b`` and ``--models a,b``."""
    if values is None:
        return None
    return [name for value in values for name in value.split(",") if name]


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "run", help="run models on engines and append result records",
        description="Run each (model, engine, repeat) in its own process and append one JSON record per run to "
        "OUT/results.jsonl. Settings come from --suite; any option given here overrides the suite's value. "
        "Every engine runs NUTS with the same chains, warmup, draws, target acceptance and max tree depth; "
        "the data depend on --seed only, the sampler seed on --seed and the repeat.")
    parser.add_argument("--suite", default="quick", help=f"named settings: {', '.join(SUITES)} (default: %(default)s)")
    parser.add_argument("--models", nargs="+", metavar="ID", help="posterior IDs, or 'all' (default: the suite's)")
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
    parser.add_argument("--seed", type=int, default=1, help="data seed; sampler seeds derive from it and the repeat (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("out/results"), help="folder for results.jsonl and logs (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before one run is stopped (default: %(default)s)")
    parser.add_argument("--resume", action="store_true",
                        help="skip runs that already have an ok record in OUT (same model, engine, device, "
                        "config hash and repeat, and for Stan the same front end: CmdStan or the bundled Stan); failed runs "
                        "are run again")
    parser.set_defaults(handler=main)


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
    sizes = [args.size] if args.size else suite["sizes"]
    model_ids = _names(args.models) or suite["models"]
    if model_ids in (["all"], "all"):
        model_ids = list(models.registry())
    specs = [models.get(model_id) for model_id in model_ids]
    engines = _names(args.engines) or list(suite["engines"])
    for engine in engines:
        if engine not in ENGINE_NAMES:
            raise models.UnknownChoice("engine", engine, ENGINE_NAMES)
    device = args.device or suite.get("device", "cpu")
    placements = {engine: placement(engine, device, args.x64, args.chain_method, settings["chains"])
                  for engine in engines}
    for spec in specs:  # unknown size, invalid sizes or non-finite data: refuse before anything runs
        for size in sizes:
            try:
                spec.data(size, args.seed)
            except UsageError:
                raise
            except ValueError as err:
                raise UsageError(str(err)) from None
    if "stan" in engines:
        from runner.engines.stan import check_program

        for spec in specs:
            check_program(spec)
    configs = [RunConfig(size=size, chains=settings["chains"], warmup=settings["warmup"],
                         draws=settings["draws"], seed=args.seed) for size in sizes]
    return [Job(spec.id, engine, config, repeat, placements[engine]) for config in configs
            for spec in specs for repeat in range(settings["repeats"]) for engine in engines]


MAX_PARALLEL_CPU_CHAINS = 64


def placement(engine: str, device: str, x64: bool, chain_method: str | None, chains: int) -> Placement:
    """The device policy: Stan on the CPU; JAX engines on ``device`` with its default precision and chain
    method unless overridden. A GPU that is not there is an error."""
    if engine not in JAX_ENGINES:
        return Placement("cpu", "float64", "parallel")
    if device == "gpu":
        check_gpu_visible()
    precision = "float64" if device == "cpu" or x64 else "float32"
    if engine != "numpyro":
        return Placement(device, precision, "vectorized")
    chain_method = chain_method or ("parallel" if device == "cpu" else "vectorized")
    if chain_method == "parallel" and device == "cpu" and chains > MAX_PARALLEL_CPU_CHAINS:
        raise UsageError(f"--chain-method parallel gives each chain its own CPU device: at most "
                         f"{MAX_PARALLEL_CPU_CHAINS} chains, got {chains} (use --chain-method vectorized)")
    if chain_method == "parallel" and device == "gpu" and chains > gpu_count():
        raise UsageError(f"--chain-method parallel needs one GPU per chain: {chains} chains, {gpu_count()} "
                         "GPU(s) visible (use --chain-method vectorized)")
    return Placement(device, precision, chain_method)


@cache
def gpu_count() -> int:
    """GPUs JAX can see, asked in a child process: a backend started here would hold GPU memory the
    workers need."""
    probe = "import jax\ntry:\n    print(len(jax.devices('gpu')))\nexcept RuntimeError:\n    print(0)"
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def check_gpu_visible() -> None:
    if gpu_count() == 0:
        raise UsageError("--device gpu: JAX sees no GPU on this machine (install jax[cuda] and check "
                         "nvidia-smi); refusing to fall back to the CPU")


def done_keys(out: Path) -> set[tuple]:
    """``Job.key()`` of every ok record in ``out``; a Stan record counts only if the Stan front end that would
    run now (CmdStan when one is found, else the bundled Stan) made it."""
    if not (out / records.RESULTS_FILE).exists():
        return set()
    from runner.engines.stan import find_cmdstan

    cmdstan_now = find_cmdstan() is not None
    return {(r["model_id"], r["engine"], r["device"], r["precision"], r["chain_method"], r["config_hash"],
             r["repeat"]) for r in records.read(out / records.RESULTS_FILE) if r["status"] == "ok"
            and (r["engine"] != "stan" or (r["engine_info"].get("stan_interface") == "cmdstanpy") == cmdstan_now)}


def main(args) -> int:
    jobs = plan(args)
    if args.resume:
        done = done_keys(args.out)
        left = [j for j in jobs if j.key() not in done]
        print(f"resume: {len(jobs) - len(left)} of {len(jobs)} runs already recorded, {len(left)} to run")
        jobs = left
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        probe = args.out / ".write-test"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise UsageError(f"cannot write results to {args.out}: {err.strerror}") from None
    written: list[dict] = []
    try:
        run_campaign(jobs, args.out, args.timeout, written)
    except KeyboardInterrupt:
        print(f"interrupted: {len(written)} of {len(jobs)} runs finished and recorded in {args.out}")
        return 130
    failed = [r for r in written if r["status"] != "ok"]
    invalid = [r for r in written if r["status"] == "ok" and not r["valid"]]
    print(f"{len(written) - len(failed)} of {len(written)} runs ok ({len(invalid)} failed a validity gate); "
          f"records in {args.out}")
    return 1 if failed else 0
