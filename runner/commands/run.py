"""``stanjax run``: run a suite of (model, engine, repeat) jobs and append their records (the planning is
:mod:`stanjax.runner.measure.plan`'s; this verb parses, runs and prints)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from stanjax import models
from stanjax.models import ROOT, UsageError
from stanjax.runner.commands.compile import compile_each, missing, prepare, programs_for, tasks_for
from stanjax.runner.core import environment, folder_lock, records
from stanjax.runner.core.config import CHAIN_METHODS, DEVICES, ISAS, STAN_FRONT_ENDS, Job
from stanjax.runner.core.engine_registry import ENGINE_NAMES
from stanjax.runner.core.isa import ISA_HELP
from stanjax.runner.measure import run_length
from stanjax.runner.measure.jobs import job_core_ids, new_campaign_id, run_jobs
from stanjax.runner.measure.plan import Request, plan, shard
from stanjax.runner.measure.resume import resume
from stanjax.runner.measure.stopping import interrupted
from stanjax.runner.measure.suites import SUITES


def add_parser(verbs) -> None:
    parser = verbs.add_parser("run", help="run models on engines and append result records", description=DESCRIPTION)
    add_arguments(parser)
    parser.set_defaults(handler=main)


DESCRIPTION = (
    "Run each (model, engine, repeat) in its own process and append one JSON record per run to "
    "OUT/results.jsonl. Settings come from --suite; any option given here overrides the suite's value. "
    "Every engine runs NUTS with the same chains, warmup, draws, target acceptance and max tree depth; "
    "the data depend on --seed only, the sampler seed on --seed and the repeat. Runs go in paired "
    "blocks: repeat r of every engine is block r, run back to back, the engines' order alternating from "
    "block to block; a report takes ratios within blocks. A run measured while other processes kept "
    "the machine busy is kept, marked loaded, and run again (--reruns)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--suite", default=Request.suite, help=f"named settings: {', '.join(SUITES)} (default: %(default)s)"
    )
    parser.add_argument(
        "--models", nargs="+", metavar="ID", help="posterior IDs, or 'all' (default: the suite's, or --model-dir's)"
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        metavar="DIR",
        help="a folder of your own models laid out like this repository's (models/<id>.py, "
        "stan/<model>.stan, jax_models/<model>.py): they join the models, and are the ones run "
        "unless --models says otherwise",
    )
    parser.add_argument("--engines", nargs="+", metavar="NAME", help=f"from {', '.join(ENGINE_NAMES)}")
    parser.add_argument("--size", help=f"data size preset: {', '.join(models.SIZE_NAMES)}")
    parser.add_argument("--chains", type=int, help="chains per run")
    parser.add_argument("--warmup", type=int, help="warmup iterations per chain")
    parser.add_argument("--draws", type=int, help="post-warmup draws per chain")
    parser.add_argument("--repeats", type=int, help="independent repeats of every (model, engine)")
    parser.add_argument(
        "--device",
        choices=DEVICES,
        help="where JAX engines run (default: the suite's, else cpu); Stan always runs on the CPU. "
        "gpu with no GPU visible to JAX is an error, never a silent CPU fallback",
    )
    parser.add_argument(
        "--x64", action="store_true", help="float64 on the GPU too (default there: float32; on the CPU always float64)"
    )
    parser.add_argument(
        "--chain-method",
        choices=CHAIN_METHODS,
        help="how NumPyro runs chains: parallel (one device each; CPU default), vectorized "
        "(one vmapped batch; GPU default) or sequential. BlackJAX engines always vectorise",
    )
    parser.add_argument(
        "--stan",
        default=Request.stan,
        metavar="|".join(STAN_FRONT_ENDS),
        help="the Stan front end: bundled (httpstan's NUTS, driven directly), cmdstan (CmdStan "
        "through cmdstanpy; CMDSTAN or cmdstanpy's folder) or auto: CmdStan when one is "
        "installed, else bundled; bundled,cmdstan runs Stan's NUTS through both in every block. The record names "
        "the one that ran (default: %(default)s)",
    )
    parser.add_argument(
        "--isa",
        choices=ISAS,
        default=Request.isa,
        help=ISA_HELP,
    )
    parser.add_argument(
        "--stan-programs",
        nargs="+",
        metavar="NAME",
        help="which Stan programs run, each in its own place in every block: model (the model's own "
        "program; for a posteriordb posterior the one posteriordb publishes) and expert (the same "
        "posterior as a Stan expert writes it, stan/expert/; models without one run their own), each also "
        "translated with stanc's optimiser: model-O1, expert-O1. Default: model. The record and the label say "
        "which ran (Stan-CPU-expert, Stan-CPU-O1)",
    )
    parser.add_argument(
        "--reruns",
        type=int,
        default=int(os.environ.get("STANJAX_RERUNS", 2)),
        metavar="K",
        help="times a run measured on a loaded machine (other processes kept more than a quarter "
        "of a core busy) is run again in its block, after waiting for quiet; its loaded record is "
        "kept, marked, and never enters a ratio (default: %(default)s; STANJAX_RERUNS sets it)",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=Request.quiet_wait,
        metavar="S",
        help="seconds to wait for a quiet machine before the campaign and before each rerun; "
        "after that it runs anyway, and a loaded run stays marked (default: %(default)s)",
    )
    parser.add_argument(
        "--cores",
        type=int,
        metavar="N",
        help="CPU cores each run may use, the first N this process may run on (default: all of "
        "them). Each worker is pinned to them: XLA's CPU threads for the JAX engines, Stan's "
        "chains x threads per chain. The record states both",
    )
    parser.add_argument(
        "--threads-per-chain",
        type=int,
        metavar="T",
        help="Stan: T threads per chain, each chain pinned to its own T cores, running the model's "
        "reduce_sum program (stan/threaded/; models without one keep one thread). Default: with "
        "CmdStan, cores // chains where that is 2 or more; with the bundled Stan, 1 (its forked "
        "chains ran reduce_sum on one core: see the README's protocol)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=Request.seed,
        help="data seed; sampler seeds derive from it and the repeat (default: %(default)s)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("out/results"), help="folder for results.jsonl and logs (default: %(default)s)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=Request.timeout,
        help="seconds before one run is stopped (default: %(default)s)",
    )
    parser.add_argument(
        "--shard",
        type=shard_arg,
        metavar="I/N",
        help="run only part I of N of the plan (a Slurm job array, a CI matrix: each machine its own "
        "part into its own results folder; `stanjax report A B ...` merges them). Parts split by "
        "model and size, so every engine and repeat of a model runs on one machine, where they "
        "can be paired",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="run nothing: print how long each model's runs will take and the total, from the "
        "records in results/ and OUT (this machine's where it has some), with what each estimate "
        "rests on; with --resume, of what is left",
    )
    parser.add_argument(
        "--min-sampler-seconds",
        type=float,
        metavar="S",
        help="where a pairing's shorter side sampled for less than S in earlier runs of this machine (results/ "
        "and OUT), both sides draw more, the same number, until it would not (pyperf's calibration, for MCMC); "
        "0: never; not with --draws (default: the suite's, 2 for quick, full and nightly)",
    )
    parser.add_argument(
        "--calibrate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start by timing a fixed gradient of each side on one core (Stan's inside its NUTS, JAX's jitted; "
        "covtype at its small size), written to OUT/measurements.jsonl under the campaign's ID, so the report can "
        "tell two machines of one name apart (default: the suite's, on for quick, full and nightly)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with the newest campaign in OUT, under its ID, so blocks pair across the interruption: "
        "skip runs it already has an ok record of (same model, engine, front end (for Stan: CmdStan or the "
        "bundled Stan), device, precision, chain method, ISA, config hash and repeat; failed runs, and with "
        "--reruns above 0 loaded ones, are run again). Only where every block it recorded is one this plan runs "
        "(the same models, settings, seed and repeats, or more of them; the engines may differ, so a campaign may "
        "be run a side at a time), and only where its records name the entropy of their sampler seeds (the "
        "new runs take it: a block's runs share their seed); otherwise a new campaign starts, and says why",
    )
    add_wait(parser)


def add_wait(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        action="store_true",
        help="where another stanjax process writes into OUT (its lock, OUT/.stanjax.lock, names it), wait until it "
        "has finished, then start (default: refuse, naming it): one writer per folder",
    )


def shard_arg(text: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N."""
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N (e.g. 2/4), got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"I/N needs 1 <= I <= N, got {text}")
    return i, n


def check_min_sampler_seconds(seconds: float | None) -> None:
    if seconds is not None and not seconds >= 0:
        raise UsageError(f"--min-sampler-seconds must be a number of seconds >= 0, got {seconds:g}")


def main(args) -> int:
    check_min_sampler_seconds(args.min_sampler_seconds)
    folder_lock.check(args.out)  # a file in the way: one line now, not after the planning's seconds
    jobs = plan(args)
    if args.shard:
        jobs = shard(jobs, *args.shard)
        print(f"shard {args.shard[0]}/{args.shard[1]}: {len(jobs)} runs")
    if args.estimate:
        jobs, _ = campaign_jobs(args, jobs)
        print(estimate_text(jobs, [folder for folder in (ROOT / "results", args.out) if folder.exists()]))
        return 0
    with folder_lock.held(args.out, args.wait):  # before what OUT holds is read: one writer plans and runs
        jobs, campaign_id = campaign_jobs(args, jobs)
        return run_campaign(args, jobs, campaign_id)


def campaign_jobs(args, jobs: list[Job]) -> tuple[list[Job], str | None]:
    """The runs to make (longer where a side would sample too briefly to measure; with ``--resume``, those OUT's
    campaign lacks, seeded as its blocks were) and the campaign they go on with (None: a new one)."""
    min_s = (
        SUITES[args.suite].get("min_sampler_s", 0.0) if args.min_sampler_seconds is None else args.min_sampler_seconds
    )
    if min_s > 0 and args.draws is None:
        jobs, lines = run_length.for_campaign(jobs, min_s, args.out if args.resume else None)
        for line in lines:
            print(line)
    if not args.resume:
        return jobs, None
    jobs, campaign_id, said = resume(args.out, jobs, clean=args.reruns > 0)
    print(said)
    return jobs, campaign_id


def run_campaign(args, jobs: list[Job], campaign_id: str | None) -> int:
    """Compile, calibrate and run ``jobs`` into OUT (its lock held); exit 1 where a run failed."""
    here = environment.machine()
    print(f"machine: {here.label} ({here.cpu}, kernel {here.kernel})")
    compile_ahead(jobs, args.out)
    if jobs and (args.calibrate if args.calibrate is not None else SUITES[args.suite].get("calibrate", False)):
        campaign_id = campaign_id or new_campaign_id()
        print(calibrate(args.out, campaign_id, job_core_ids(jobs[0])))
    written: list[records.RunRecord] = []
    try:
        rerun = run_jobs(
            jobs,
            args.out,
            args.timeout,
            written,
            reruns=args.reruns,
            quiet_wait_s=args.quiet_wait,
            campaign_id=campaign_id,
        )
    except KeyboardInterrupt as stop:
        return interrupted(stop, written, jobs, args.out)
    print(campaign_summary(written, rerun, args.out))
    return 1 if any(r.status != "ok" for r in written) else 0


def compile_ahead(jobs: list[Job], out: Path) -> None:
    """Every program the bundled Stan builds for these runs, compiled before the first is measured, one per usable core
    at once (compilers' messages in ``out``'s compile.log): on a cold cache `make report` compiled its three programs
    one after another inside its first runs and its calibration. A program that fails is said here and its runs
    record the failure."""
    programs = programs_for(jobs)
    if not programs:
        return
    start = time.perf_counter()
    todo = missing(programs)
    at_once = max(1, min(len(os.sched_getaffinity(0)), len(todo)))
    tasks = tasks_for(todo)
    if tasks:
        out.mkdir(parents=True, exist_ok=True)
        prepare(todo, at_once, out / "compile.log")
        compile_each(tasks, at_once, out / "compile.log")
    print(
        f"Stan programs: {len(tasks)} of {len(programs)} to compile ({len(programs) - len(tasks)} in the cache), "
        f"{at_once} at once, in {time.perf_counter() - start:.0f} s"
    )


def calibrate(out: Path, campaign_id: str, cpus: list[int] | None) -> str:
    """The campaign's calibration, appended to ``out``'s measurements; one line saying what it measured. A
    calibration that fails is said and the campaign goes on without one."""
    from stanjax.runner.measure import gradient_cost

    try:
        sides, load = gradient_cost.calibrate(cpus)
    except (RuntimeError, OSError, ValueError) as err:
        return f"calibration failed ({err}): the campaign goes on without one"
    fields = {"measure": "calibration", "campaign_id": campaign_id, "sides": sides, "load": load}
    records.append(out / records.MEASUREMENTS_FILE, records.measurement("calibration", fields))
    model_id, size = gradient_cost.CALIBRATION
    costs = ", ".join(f"{s['side']} {s['ms_per_gradient']:.4f} ms" for s in sides)
    loaded = " (LOADED: other work beside it; it tells no machine apart)" if load["loaded"] else ""
    return f"calibration ({model_id}, {size}, one core): {costs} a gradient{loaded}"


def estimate_text(jobs: list[Job], history: list[Path]) -> str:
    """Per model and size: its runs' estimated seconds and what the estimates rest on; then the total."""
    from stanjax.runner.measure.estimates import Estimator, minutes

    estimate = Estimator(records.read(history, summaries=False) if history else [], machine=environment.machine().slug)
    per_model: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for job in jobs:
        per_model.setdefault((job.model_id, job.config.size), []).append(estimate(job))
    lines = [
        f"{model_id} ({size}): {len(found)} runs, ~{minutes(sum(s for s, _ in found))} "
        f"({'; '.join(sorted({basis for _, basis in found}))})"
        for (model_id, size), found in per_model.items()
    ]
    total = sum(s for found in per_model.values() for s, _ in found)
    return "\n".join([*lines, f"total: {len(jobs)} runs, ~{minutes(total)} of machine time (compiles not counted)"])


def campaign_summary(written: list[records.RunRecord], rerun: list[str], out: Path) -> str:
    """What a campaign did, in a few lines: runs ok and valid, runs rerun and why, runs still loaded."""
    final = {}
    for r in written:  # the last record of each run: a rerun's replaces its loaded one
        final[r.key()] = r
    failed = [r for r in final.values() if r.status != "ok"]
    invalid = [r for r in final.values() if r.status == "ok" and not r.valid]
    still_loaded = [r for r in final.values() if r.load and r.load.loaded]
    lines = [
        f"{len(final) - len(failed)} of {len(final)} runs ok ({len(invalid)} failed a validity gate); records in {out}"
    ]
    if rerun:
        lines.append(f"{len(rerun)} run(s) rerun after a loaded measurement (kept in the records, marked loaded):")
        lines += [f"  {why}" for why in rerun]
    if still_loaded:
        lines.append(
            f"{len(still_loaded)} run(s) still loaded after their reruns: their blocks are incomplete and "
            "enter no ratio"
        )
    return "\n".join(lines)
