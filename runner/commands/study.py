"""``stanjax study NAME``: a scaling study — ordinary run records along one axis, plus its own measurements."""

from __future__ import annotations

from pathlib import Path

from models import UsageError
from runner import records, studies
from runner.campaign import run_campaign
from runner.commands.run import check_gpu_visible, done_keys, placement
from runner.config import Job, RunConfig

STUDY_NAMES = ("data-size", "chains", "devices")
SCALES = ("tiny", "cpu", "gpu")
ITERATIONS = {"tiny": (300, 300), "cpu": (1000, 1000), "gpu": (1000, 1000)}  # warmup, draws


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "study", help="run a scaling study (data size, chain count, device count)",
        description="data-size: logistic regression and Bradley-Terry over growing N, Stan vs JAX (where does "
        "JAX overtake Stan?). chains: vectorised NumPyro NUTS and BlackJAX ChEES over 4 ... 16384 chains, plus "
        "random-walk Metropolis on rlouf's mixture in JAX and NumPy. devices: log density and gradient with the "
        "data rows sharded over 1, 2, 4, ... devices. Run records go to OUT/results.jsonl (the report reads "
        "them like any run), other measurements to OUT/measurements.jsonl.")
    parser.add_argument("name", choices=STUDY_NAMES, help="which study")
    parser.add_argument("--scale", choices=SCALES, default="cpu",
                        help="grid: tiny (CI, seconds), cpu (this machine, tens of minutes), gpu (default: %(default)s)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="where the JAX engines run; Stan always runs on the CPU (default: %(default)s)")
    parser.add_argument("--simulate-devices", type=int, metavar="N",
                        help="devices study on a CPU: let XLA split the CPU into N devices")
    parser.add_argument("--out", type=Path, default=Path("out/studies"), help="folder (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before one run is stopped")
    parser.add_argument("--engines", nargs="+", metavar="NAME",
                        help="only these of the study's engines (data-size: stan, numpyro, and blackjax_nuts on a "
                        "GPU; chains: numpyro, blackjax_chees, and rwmh for the random-walk measurements), e.g. "
                        "Stan on the CPU cores in one process and the JAX engines on the GPU in another")
    parser.add_argument("--max-n", type=int, metavar="N",
                        help="data-size: leave out the grid points above N (Stan at a million rows takes hours)")
    parser.add_argument("--resume", action="store_true",
                        help="skip the runs and measurements OUT already holds (ok runs only; failed ones run again)")
    parser.set_defaults(handler=main)


def study_engines(name: str, device: str) -> tuple[str, ...]:
    """The engines a study runs on ``device`` (``rwmh``: the chains study's random-walk measurements)."""
    if name == "data-size":
        return ("stan", "numpyro") + (("blackjax_nuts",) if device == "gpu" else ())
    return (*studies.CHAINS_ENGINES, "rwmh") if name == "chains" else ()


def data_size_jobs(scale: str, device: str, engines: tuple[str, ...], max_n: int | None = None) -> list[Job]:
    warmup, draws = ITERATIONS[scale]
    jobs = []
    for model_id, (preset, entry, grids) in studies.DATA_SIZE.items():
        size = studies.DATA_SIZE_TINY_PRESET if scale == "tiny" else preset
        for n in [n for n in grids[scale] if max_n is None or n <= max_n]:
            config = RunConfig(size=size, warmup=warmup, draws=draws, resize=((entry, n),))
            jobs += [Job(model_id, engine, config, 0, placement(engine, device, False, None, config.chains))
                     for engine in engines]
    return jobs


def chains_jobs(scale: str, device: str, engines: tuple[str, ...], max_n: int | None = None) -> list[Job]:
    warmup, draws = ITERATIONS[scale]
    size = "tiny" if scale == "tiny" else "small"
    return [Job(studies.LOGISTIC, engine, RunConfig(size=size, chains=chains, warmup=warmup, draws=draws), 0,
                placement(engine, device, False, "vectorized", chains))
            for chains in studies.CHAINS[scale] for engine in studies.CHAINS_ENGINES if engine in engines]


def main(args) -> int:
    if args.device == "gpu":
        check_gpu_visible()
    if args.simulate_devices is not None and not 1 <= args.simulate_devices <= 64:
        raise UsageError(f"--simulate-devices must be between 1 and 64, got {args.simulate_devices}")
    known = study_engines(args.name, args.device)
    unknown = sorted(set(args.engines or ()) - set(known))
    if unknown:
        raise UsageError(f"study {args.name} on {args.device} runs {', '.join(known) or 'no engines'}; "
                         f"not {', '.join(unknown)}")
    engines = tuple(args.engines or known)
    args.out.mkdir(parents=True, exist_ok=True)
    measurements = args.out / "measurements.jsonl"
    jobs = {"data-size": data_size_jobs, "chains": chains_jobs}.get(args.name, lambda *_: [])(
        args.scale, args.device, engines, args.max_n)
    if args.resume:
        done = done_keys(args.out)
        jobs = [j for j in jobs if j.key() not in done]
    measured = {(m["backend"], m["chains"], m["steps"]) for m in records.read(args.out, kind="measurement")
                if m.get("measure") == "rwmh"} if args.resume else set()
    written: list[dict] = []
    try:
        if jobs:
            run_campaign(jobs, args.out, args.timeout, written, extra={"study": args.name})
        if args.name == "chains" and "rwmh" in engines:
            rwmh_measurements(args, measurements, measured)
        if args.name == "devices":
            devices_measurements(args, measurements)
    except KeyboardInterrupt:
        print(f"interrupted: {len(written)} of {len(jobs)} runs finished; records in {args.out}")
        return 130
    failed = [r for r in written if r["status"] != "ok"]
    print(f"study {args.name} ({args.scale}): {len(written) - len(failed)} of {len(written)} runs ok; "
          f"records in {args.out}")
    return 1 if failed else 0


def rwmh_measurements(args, measurements: Path, measured: set[tuple]) -> None:
    """Random-walk Metropolis per chain count, in JAX (on ``--device``) and in NumPy; ``measured`` are skipped."""
    for chains in studies.CHAINS[args.scale]:
        for backend in ("jax", "numpy"):
            if (backend, chains, studies.RWMH_STEPS[args.scale]) not in measured:
                env = {"JAX_PLATFORMS": "cuda" if args.device == "gpu" and backend == "jax" else "cpu"}
                row = studies.measure(["rwmh", args.scale, str(chains), backend], env, args.timeout)
                records.append(measurements, records.measurement(args.name, {"measure": "rwmh", **row}))
                print(f"rwmh {backend} {chains} chains: {row['draws_per_s']:.3g} draws/s, "
                      f"{row['ess_per_s']:.3g} ESS/s")


def devices_measurements(args, measurements: Path) -> None:
    """ms per sharded gradient on 1, 2, 4, ... devices."""
    env = {"JAX_PLATFORMS": "cuda" if args.device == "gpu" else "cpu"}
    if args.simulate_devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.simulate_devices}"
    for row in studies.measure(["devices", args.scale], env, args.timeout):
        records.append(measurements, records.measurement(args.name, {"measure": "sharded_gradient", **row}))
        print(f"{row['model_id']} on {row['devices']} device(s): {row['ms_per_gradient']:.3f} ms per gradient")
