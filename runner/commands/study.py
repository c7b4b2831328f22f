"""``stanjax study NAME``: a scaling study — ordinary run records along one axis, plus its own measurements."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from stanjax import models
from stanjax.models import UsageError
from stanjax.runner.campaigns.studies import SCALES, STUDIES, Study
from stanjax.runner.commands.run import add_wait
from stanjax.runner.core import folder_lock, records
from stanjax.runner.core.config import Job, campaign_entropy
from stanjax.runner.core.engine_registry import entry
from stanjax.runner.measure.jobs import run_jobs
from stanjax.runner.measure.plan import (
    check_cores,
    check_gpu_visible,
    check_seed_and_timeout,
    placement,
    with_threads,
)
from stanjax.runner.measure.resume import resume
from stanjax.runner.measure.stopping import interrupted


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "study",
        help="run a scaling study (data size, chain count, device count)",
        description=" ".join(f"{study.name}: {study.measures}." for study in STUDIES.values())
        + " Run records go to OUT/results.jsonl (the report reads them like any run), other measurements to "
        "OUT/measurements.jsonl.",
    )
    parser.add_argument("name", choices=STUDIES, help="which study")
    parser.add_argument(
        "--scale",
        choices=SCALES,
        default="cpu",
        help="grid: tiny (CI, seconds), cpu (this machine, tens of minutes), gpu (default: %(default)s)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="where the JAX engines run; Stan always runs on the CPU (default: %(default)s)",
    )
    parser.add_argument(
        "--simulate-devices", type=int, metavar="N", help="devices study on a CPU: let XLA split the CPU into N devices"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="devices study: run as N JAX processes on this host (jax.distributed, CPU collectives "
        "through gloo), --simulate-devices split among them; the code path of several hosts",
    )
    parser.add_argument("--out", type=Path, default=Path("out/studies"), help="folder (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before one run is stopped")
    parser.add_argument(
        "--cores",
        type=int,
        metavar="N",
        help="CPU cores each run may use, as for `stanjax run --cores` (default: all usable)",
    )
    parser.add_argument(
        "--engines",
        nargs="+",
        metavar="NAME",
        help="only these of the study's engines ("
        + "; ".join(
            f"{study.name}: {', '.join(study.engines['cpu'])} on a CPU, {', '.join(study.engines['gpu'])} on a GPU"
            for study in STUDIES.values()
            if study.engines["gpu"]
        )
        + "), e.g. Stan on the CPU cores in one process and the JAX "
        "engines on the GPU in another",
    )
    parser.add_argument(
        "--max-n",
        type=int,
        metavar="N",
        help="data-size: leave out the grid points above N (Stan at a million rows takes hours)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with OUT's newest campaign, as `stanjax run --resume` does (its ID and its sampler seeds' "
        "entropy, where it ran no grid point this study leaves out): skip the runs it holds an ok record of, and "
        "the measurements OUT holds",
    )
    add_wait(parser)
    parser.set_defaults(handler=main)


def main(args) -> int:
    study = STUDIES[args.name]
    check_seed_and_timeout(1, args.timeout)
    if args.device == "gpu":
        check_gpu_visible()
    if args.simulate_devices is not None and not 1 <= args.simulate_devices <= 64:
        raise UsageError(f"--simulate-devices must be between 1 and 64, got {args.simulate_devices}")
    if args.processes != 1 and (
        args.name != "devices"
        or args.device != "cpu"
        or not 2 <= args.processes <= 16
        or (args.simulate_devices or args.processes) % args.processes
    ):
        raise UsageError(
            "--processes N: the devices study on the CPU, 2 <= N <= 16, and --simulate-devices a "
            f"multiple of N (got --processes {args.processes}, --simulate-devices "
            f"{args.simulate_devices})"
        )
    known = study.engines[args.device]
    unknown = sorted(set(args.engines or ()) - set(known))
    if unknown:
        raise UsageError(
            f"study {args.name} on {args.device} runs {', '.join(known) or 'no engines'}; not {', '.join(unknown)}"
        )
    engines = tuple(args.engines or known)

    cores = check_cores(args.cores)

    def plan_engine(engine: str, chain_method: str | None, chains: int):
        return placement(engine, args.device, False, chain_method, chains), entry(engine).front_end()

    entropy = campaign_entropy()
    jobs = [
        replace(
            job,
            entropy=entropy,
            cores=cores,
            placement=with_threads(
                job.placement, job.engine, job.front_end, models.get(job.model_id), cores, job.config
            ),
        )
        for job in study.jobs(study, args.scale, engines, plan_engine, args.max_n)
    ]
    with folder_lock.held(args.out, args.wait):  # before what OUT holds is read: one writer resumes and runs
        return run_study(args, study, engines, jobs)


def run_study(args, study: Study, engines: tuple[str, ...], jobs: list[Job]) -> int:
    """The study's runs and measurements into OUT (its lock held), less what a resumed study has; exit 1 where a
    run failed."""
    campaign_id = None
    if args.resume:
        jobs, campaign_id, said = resume(args.out, jobs, clean=False)
        print(said)
    measured = records.read_measurements(args.out) if args.resume else []
    written: list[records.RunRecord] = []
    try:
        if jobs:
            run_jobs(jobs, args.out, args.timeout, written, study=study.name, campaign_id=campaign_id)
        if study.measure:
            study.measure(
                study,
                args.scale,
                args.device,
                engines,
                args.out / records.MEASUREMENTS_FILE,
                measured,
                args.timeout,
                simulate_devices=args.simulate_devices,
                processes=args.processes,
            )
    except KeyboardInterrupt as stop:
        return interrupted(stop, written, jobs, args.out)
    failed = [r for r in written if r.status != "ok"]
    print(
        f"study {args.name} ({args.scale}): {len(written) - len(failed)} of {len(written)} runs ok; "
        f"records in {args.out}"
    )
    return 1 if failed else 0
