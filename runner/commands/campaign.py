"""``stanjax campaign gpu``: the GPU comparison planned to fit a time budget, run one step per command."""

from __future__ import annotations

import json
import re
import signal
import time
from contextlib import nullcontext
from pathlib import Path

from stanjax.models import ROOT, UnknownChoice, UsageError
from stanjax.runner.campaigns.gpu_campaign import PHASES, Plan, make_plan, step_wall_s, steps
from stanjax.runner.campaigns.gpu_steps import (
    ARCHIVED_FILE,
    COMPILE_ESTIMATE_S,
    COMPILE_FILE,
    ESTIMATES_FILE,
    PLAN_FILE,
    all_items,
    estimates_summary,
    lanes_left,
    pack,
    run_step,
    step_number,
)
from stanjax.runner.commands.compile import compile_each, missing, prepare, programs_for, tasks_for
from stanjax.runner.commands.run import add_wait
from stanjax.runner.core import environment, folder_lock, records
from stanjax.runner.core.config import ISAS
from stanjax.runner.core.isa import ISA_HELP
from stanjax.runner.measure.estimates import Estimator
from stanjax.runner.measure.plan import check_gpu_visible, usable_cores
from stanjax.runner.measure.stopping import stopped_by

DESCRIPTION = (
    "Plan the whole GPU-vs-CPU comparison to fit --budget on this box, then run it one step per command: each "
    "step runs at most --step (9 minutes: a borrowed GPU's commands may take 10), goes on where the last one "
    "stopped, and packs its records into OUT/archives/step-NN.tar.gz (parts of at most 16 MiB). Run the same "
    "command again until it says the campaign is complete. Phases in priority order: "
    + "; ".join(f"{key}: {text}" for key, text in PHASES.items())
    + ". Two lanes run at once on disjoint cores: "
    "the JAX engines on the GPU, and Stan and NumPyro on the CPU (alternating, never at once) on the other cores. "
    "Each run's time is estimated from earlier records (--history); --dry-run prints the plan without running."
)


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "campaign", help="the GPU campaign: a budgeted plan, run step by step", description=DESCRIPTION
    )
    parser.add_argument("kind", choices=("gpu",), help="which campaign (gpu: a box with one GPU)")
    parser.add_argument(
        "--budget",
        type=duration,
        default=25 * 60.0,
        metavar="TIME",
        help="machine time the whole plan may take, e.g. 25m, 90m, 1h (default: 25m)",
    )
    parser.add_argument(
        "--step",
        type=duration,
        default=9 * 60.0,
        metavar="TIME",
        help="the most one command runs, Stan compilation included (default: 9m)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/gpu-campaign"),
        help="folder of the plan, records, logs and archives (default: %(default)s)",
    )
    parser.add_argument(
        "--gpu-cores",
        type=int,
        default=2,
        metavar="N",
        help="CPU cores of the GPU lane (JAX's host threads); the CPU lane gets the rest (default: %(default)s)",
    )
    parser.add_argument(
        "--cores",
        type=int,
        metavar="N",
        help="CPU cores the campaign uses, the first N usable (default: all usable); with "
        "--dry-run, any N: the plan for a box of N cores",
    )
    parser.add_argument(
        "--phases",
        type=lambda text: tuple(name.strip() for name in text.split(",") if name.strip()),
        default=tuple(PHASES),
        metavar="NAMES",
        help=f"only these phases, comma-separated, e.g. claims,chains (default: all: {','.join(PHASES)})",
    )
    parser.add_argument(
        "--isa",
        choices=ISAS,
        default="native",
        help=ISA_HELP,
    )
    parser.add_argument(
        "--history",
        type=Path,
        nargs="+",
        default=[ROOT / "results"],
        metavar="DIR",
        help="records whose wall times estimate each run (default: the checkout's results/)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds before one run is stopped, at most the step's time left (default: 3600)",
    )
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="before planning, measure on this box the gradient cost of every setup the chosen phases run (each "
        "lane's on its cores: model, size, side, device, precision, chains a call, threads), into "
        "OUT/measurements.jsonl; estimates are then composed from them (leapfrog steps an iteration from earlier "
        "runs × iterations × the cost) in place of walls scaled from other machines",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (steps, estimates and their basis, what is left out and why; with "
        "an OUT of an earlier step, what is done) and run nothing; needs no GPU",
    )
    add_wait(parser)
    parser.set_defaults(handler=main)


def duration(text: str) -> float:
    """Seconds from "25m", "90s", "1h" or "1h30m"; a bare number is minutes."""
    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*", text)
    if re.fullmatch(r"\d+(?:\.\d+)?", text.strip()):
        return float(text) * 60
    if not match or not any(match.groups()):
        raise ValueError(f"not a duration: {text!r}")
    hours, minutes, seconds = (float(group or 0) for group in match.groups())
    return hours * 3600 + minutes * 60 + seconds


duration.__name__ = "duration (e.g. 25m)"  # argparse names the type in its one-line error


def _shown(value) -> str:
    return value if isinstance(value, str) else f"{value:g}"


def planned(args, cores: int) -> tuple[Plan, bool]:
    """OUT's plan if it holds one made with these options (else a UsageError), or a new one; True if new."""
    path = args.out / PLAN_FILE
    if path.exists():
        plan = Plan.from_dict(json.loads(path.read_text()))
        asked = {
            "budget_s": args.budget,
            "step_s": args.step,
            "cores": cores,
            "gpu_cores": args.gpu_cores,
            "isa": args.isa,
        }
        differs = {key: (getattr(plan, key), value) for key, value in asked.items() if getattr(plan, key) != value}
        if differs:
            what = ", ".join(f"{key} {_shown(old)} (now {_shown(new)})" for key, (old, new) in differs.items())
            raise UsageError(
                f"{args.out} holds a plan made with other options: {what}; run with those, or give a new --out"
            )
        return plan, False
    history = [folder for folder in args.history if folder.exists()]
    runs = records.read(history, summaries=False) if history else []
    measured = records.read_measurements(history) if history else []
    if (args.out / records.MEASUREMENTS_FILE).exists():  # this box's own, from an earlier --calibrate
        measured += records.read_measurements(args.out / records.MEASUREMENTS_FILE)
    if args.calibrate:
        measured += calibrate(args, cores)
    estimate = Estimator(runs, measured)
    compile_s = 0.0 if (args.out / COMPILE_FILE).exists() else COMPILE_ESTIMATE_S
    return make_plan(args.budget, args.step, cores, args.gpu_cores, estimate, compile_s, args.phases, args.isa), True


def calibrate(args, cores: int) -> list[dict]:
    """The gradient cost of every setup the chosen phases run, measured on the lanes' cores (both lanes at once),
    appended to OUT's measurements as they come: the measurements."""
    from concurrent.futures import ThreadPoolExecutor

    from stanjax.runner.campaigns.gpu_campaign import units
    from stanjax.runner.measure.gradient_cost import measure_setups, setup_of

    draft = [unit for unit in units(cores, args.gpu_cores, 0, Estimator([]), args.isa) if unit.phase in args.phases]
    setups: dict[str, list[dict]] = {"gpu": [], "cpu": []}
    for item in (item for unit in draft for item in unit.items if item.job):
        setups[item.lane].append(setup_of(item.job))
    usable = usable_cores()[:cores]
    cpus = {"gpu": usable[: args.gpu_cores], "cpu": usable[args.gpu_cores :]}
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(lambda lane: measure_setups(setups[lane], cpus[lane]), ("gpu", "cpu")))
    rows = [records.measurement("gpu-campaign", {"measure": "gradient_cost", **row}) for lane in found for row in lane]
    for row in rows:
        records.append(args.out / records.MEASUREMENTS_FILE, row)
    print(f"calibration: {len(rows)} gradient cost(s) measured in {time.perf_counter() - start:.0f} s")
    return rows


def check(args, cores: int) -> None:
    if not 60 <= args.step <= args.budget:
        raise UsageError(
            f"--step must be at least 1 minute and at most --budget, got {args.step:g} s (budget {args.budget:g} s)"
        )
    if not 1 <= args.gpu_cores < cores:
        raise UsageError(
            f"--gpu-cores must leave the CPU lane at least one core: between 1 and {cores - 1}, got {args.gpu_cores}"
        )
    if not args.phases:
        raise UsageError(f"--phases takes names from {', '.join(PHASES)}; none given")
    for name in args.phases:
        if name not in PHASES:
            raise UnknownChoice("phase", name, PHASES)


def describe(plan: Plan, out: Path, compile_s: float) -> None:
    """The plan as steps, each item with its estimate and basis; what is done; what was left out and why."""
    items = all_items(plan)
    left = lanes_left(plan, out) if out.exists() else {lane: plan.items(lane) for lane in ("gpu", "cpu")}
    done = len(items) - sum(len(lane) for lane in left.values())
    cut = steps(left, plan.step_s, compile_s)
    total = compile_s + sum(step_wall_s(step) for step in cut)
    print(
        f"GPU campaign: {len(items)} items in {len(plan.units)} units, {done} done; what is left: "
        f"{len(cut)} step(s), about {total / 60:.0f} min of the {plan.budget_s / 60:g} min budget"
    )
    print(
        f"lanes: GPU on cores 0-{plan.gpu_cores - 1}, CPU on cores {plan.gpu_cores}-{plan.cores - 1} (of the "
        f"{plan.cores} usable)"
        + (f"; first step starts with about {compile_s / 60:.0f} min of Stan compilation" if compile_s else "")
    )
    for number, step in enumerate(cut, start=1):
        print(f"step {number}: about {step_wall_s(step) / 60:.1f} min")
        for lane, lane_items in step.items():
            for item in lane_items:
                print(f"  {lane}  {item.estimate_s:6.0f} s  {item.label()}  [{item.basis}]")
    for what, why in plan.left_out:
        print(f"left out: {what}: {why}")


def main(args) -> int:
    usable = len(usable_cores())
    cores = args.cores or usable
    if not 2 <= cores <= (cores if args.dry_run else usable):
        raise UsageError(
            f"--cores must be between 2 and {usable} (the cores this process may run on; more only "
            f"with --dry-run), got {cores}"
        )
    check(args, cores)
    folder_lock.check(args.out)
    if not args.dry_run:
        check_gpu_visible("campaign gpu")
    writes = not args.dry_run or args.calibrate  # a dry run reads OUT; its calibration appends to it
    with folder_lock.held(args.out, args.wait) if writes else nullcontext():  # one step at a time
        plan, new = planned(args, cores)
        if args.dry_run:
            describe(plan, args.out, 0.0 if (args.out / COMPILE_FILE).exists() else COMPILE_ESTIMATE_S)
            return 0
        return run(plan, args.out, args.timeout, new)


def compile_stan(plan: Plan, out: Path, step: int) -> None:
    """Every Stan program of the plan, as its runs build it (ISA, threaded program or not), compiled at once on
    all the box's cores (none where a step before compiled them on this machine); the times of every step in
    compile.json."""
    programs = programs_for(item.job for item in all_items(plan) if item.job)
    start = time.perf_counter()
    todo = missing(programs)
    tasks = tasks_for(todo)
    if tasks:
        prepare(todo, plan.cores, out / "compile.log")
    failed = compile_each(tasks, plan.cores, out / "compile.log") if tasks else 0
    seconds = time.perf_counter() - start
    path = out / COMPILE_FILE
    steps = json.loads(path.read_text()) if path.exists() else []
    steps.append(
        {
            "step": step,
            "programs": len(programs),
            "compiled": len(tasks),
            "parallel": plan.cores,
            "seconds": seconds,
            "failed": bool(failed),
            "machine": environment.machine().slug,
        }
    )
    path.write_text(json.dumps(steps, indent=1))
    print(
        f"Stan programs: {len(tasks)} of {len(programs)} to compile ({len(programs) - len(tasks)} in the cache), "
        f"{plan.cores} at once, in {seconds:.0f} s"
    )


def run(plan: Plan, out: Path, timeout_s: float, new: bool) -> int:
    """One step: compile first if no step has, run both lanes until the step's time is up, pack the archive."""
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    if new:
        (out / PLAN_FILE).write_text(json.dumps(plan.as_dict(), indent=1))
    step = step_number(out)
    # What earlier archives hold: this step packs everything after it (a step killed before packing included).
    offsets = json.loads((out / ARCHIVED_FILE).read_text()) if (out / ARCHIVED_FILE).exists() else {}
    written: list[records.RunRecord] = []
    timed: list[dict] = []
    exit_code = None
    try:
        with stopped_by(signal.SIGTERM):
            compile_stan(plan, out, step)
            left = run_step(plan, out, start + plan.step_s, timeout_s, written, timed=timed)
    except KeyboardInterrupt as stop:
        exit_code = 128 + getattr(stop, "signum", signal.SIGINT)
        left = lanes_left(plan, out)
        print(f"interrupted: the runs finished so far are recorded in {out}")
    estimates = out / ESTIMATES_FILE
    earlier = json.loads(estimates.read_text()) if estimates.exists() else []
    estimates.write_text(json.dumps(earlier + [{"step": step, **t} for t in timed], indent=1))
    print(estimates_summary(timed))
    archives = pack(out, step, offsets)
    (out / ARCHIVED_FILE).write_text(
        json.dumps(
            {
                name: (out / name).stat().st_size
                for name in (records.RESULTS_FILE, records.MEASUREMENTS_FILE)
                if (out / name).exists()
            }
        )
    )
    sizes = ", ".join(f"{path} ({path.stat().st_size / 2**20:.1f} MiB)" for path in archives)
    failed = [record for record in written if record.status != "ok"]
    invalid = [record for record in written if record.status == "ok" and not record.valid]
    remaining = sum(len(items) for items in left.values())
    print(
        f"step {step}: {len(written)} runs ({len(failed)} failed, {len(invalid)} invalid) in "
        f"{(time.monotonic() - start) / 60:.1f} min; archive: {sizes}"
    )
    print(f"{remaining} item(s) left: run the same command again" if remaining else "the campaign is complete")
    if exit_code is not None:
        return exit_code
    return 1 if failed else 0
