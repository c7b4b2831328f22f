"""What one log density + gradient costs, measured before any sampling, so a plan can be measured before it is made,
two machines of one name can be told apart and the two sides compared per gradient: each side on either clock of
:mod:`stanjax.runner.measure.gradient_clocks` (``loop``: a compiled loop outside any sampler; ``nuts``: inside its
NUTS), every measurement saying which.

``python -m stanjax.runner.measure.gradient_cost SIDE MODEL SIZE [N] [--clock CLOCK]`` measures one in a fresh
process (the device, precision and cores are fixed when JAX starts) and prints one JSON line; :func:`measure` runs
that process. ``STANJAX_CPUS`` pins it, as for the studies' measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from stanjax import models
from stanjax.runner.core import environment
from stanjax.runner.measure import gradient_clocks
from stanjax.runner.measure.gradient_clocks import CLOCKS, DEFAULT_CLOCK, clock_of

# The fixed calibration a campaign starts with: one model and size, each side on one core, the same everywhere.
CALIBRATION = ("covtype_synth-logistic_regression", "small")


def measure(
    side: str,
    model_id: str,
    size: str,
    n: int | None = None,
    cpus: list[int] | None = None,
    env: dict | None = None,
    timeout_s: float = 900,
    options: tuple[str, ...] = (),
) -> dict:
    """One gradient cost, measured in a fresh process (pinned to ``cpus`` where given; ``options``: the
    module's own, e.g. ("--device", "gpu"))."""
    args = [side, model_id, size, *([str(n)] if n is not None else []), *options]
    extra = {"STANJAX_CPUS": ",".join(map(str, cpus))} if cpus else {}
    done = environment.run_module("stanjax.runner.measure.gradient_cost", args, {**extra, **(env or {})}, timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"gradient cost {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def setup_of(job) -> dict:
    """What a job's gradient cost depends on (a :class:`stanjax.runner.core.config.Job`): the side, model, sizes,
    device, precision, the chains one call computes (all of a vectorised batch, else one), Stan's threads a
    chain, and the clock (the side's ``DEFAULT_CLOCK``: a run-time estimate's, kept from before the clocks were
    named). Equal setups are measured once; an estimate finds its setup's cost by it."""
    from stanjax.runner.core.engine_registry import STAN, family

    stan = family(job.engine) == STAN
    spec = models.get(job.model_id)
    side = "stan" if stan else "jax"
    return {
        "side": side,
        "clock": DEFAULT_CLOCK[side],
        "model_id": job.model_id,
        "size": job.config.size,
        "sizes": spec.size_kwargs(job.config.size, job.config.resize),
        "device": job.device,
        "precision": job.placement.precision,
        "chains": job.config.chains if job.placement.chain_method == "vectorized" else 1,
        "threads": job.placement.threads_per_chain if stan else 1,
    }


def setup_key(row: dict) -> str:
    """A setup (or a measurement of one) as one string, for lookups (its clock as :func:`clock_of` reads it)."""
    names = ("side", "model_id", "sizes", "device", "precision", "chains", "threads")
    fields = {**{name: row[name] for name in names}, "program": row.get("program", ""), "clock": clock_of(row)}
    return json.dumps(fields, sort_keys=True)


def measure_one(setup: dict) -> dict:
    """One setup's cost, in this process (JAX started for the setup's device and precision)."""
    spec = models.get(setup["model_id"])
    resize = tuple(
        (name, value) for name, value in setup["sizes"].items() if spec.sizes[setup["size"]].get(name) != value
    )
    return cost(
        setup["side"],
        clock_of(setup),
        setup["model_id"],
        setup["size"],
        resize,
        setup["device"],
        setup["precision"],
        setup["chains"],
        setup["threads"],
        setup.get("program", ""),
    )


def cost(
    side: str,
    clock: str,
    model_id: str,
    size: str,
    resize: tuple = (),
    device: str = "cpu",
    precision: str = "float64",
    chains: int = 1,
    threads: int = 1,
    program: str = "",
    repeats: int | None = None,
    tries: int = 1,
) -> dict:
    """One gradient cost on ``clock``, in this process: Stan's on the CPU in float64, one chain, ``threads`` a
    chain, ``program`` (``Placement.program``); JAX's on ``device`` in ``precision`` over ``chains``; ``repeats``
    (fixed) and ``tries`` size a loop clock."""
    if clock not in CLOCKS:
        raise models.UnknownChoice("clock", clock, CLOCKS)
    if clock == "nuts" and (repeats is not None or tries > 1):
        raise models.UsageError("repeats and tries size a loop: the nuts clock runs a sampler")
    if side == "stan":
        if clock == "loop":
            return gradient_clocks.stan_loop(model_id, size, resize, threads, program, repeats, tries)
        return gradient_clocks.stan_nuts(model_id, size, resize, threads, program)
    if clock == "loop":
        return gradient_clocks.jax_loop(model_id, size, resize, device, precision, chains, repeats, tries)
    return gradient_clocks.jax_nuts(model_id, size, resize, device, precision, chains)


def measure_setups(setups: list[dict], cpus: list[int] | None = None, timeout_s: float = 1800, say=print) -> list[dict]:
    """Every setup's cost, one fresh process for each side, clock, device and precision (JAX starts once a process;
    Stan's NUTS forks its chains, which a process that started JAX must not), each pinned to ``cpus``; a setup that
    fails is said and left out."""
    groups: dict[tuple, list[dict]] = {}
    for setup in {setup_key(s): s for s in setups}.values():
        groups.setdefault((setup["side"], clock_of(setup), setup["device"], setup["precision"]), []).append(setup)
    found = []
    for (side, clock, device, precision), group in groups.items():
        platform = "cuda" if device == "gpu" else "cpu"
        env = {"JAX_PLATFORMS": platform, **({"STANJAX_CPUS": ",".join(map(str, cpus))} if cpus else {})}
        done = environment.run_module(
            "stanjax.runner.measure.gradient_cost", ["--batch", json.dumps(group)], env, timeout_s
        )
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        found += [row for row in rows if "error" not in row]
        for row in rows:
            say(
                f"gradient cost {row.get('side')} {row.get('clock', clock)} {row.get('device')} {row.get('precision')} "
                f"{row.get('model_id')}{' (' + row['program'] + ')' if row.get('program') else ''} {row.get('sizes')}: "
                + (f"FAILED: {row['error']}" if "error" in row else f"{row['ms_per_gradient']:.4g} ms")
            )
        if done.returncode != 0 and not rows:
            say(
                f"gradient costs of {side} ({clock} clock) on {device} ({precision}) failed: "
                f"{done.stderr.strip().splitlines()[-1:]}"
            )
    return found


# Tries of each side, the fastest kept (other work and chance only ever add time): Stan's in fresh processes, JAX's
# on fresh copies of its inputs in one process. The median of 3 Stan runs had ranged 0.041-0.054 ms on one machine,
# their fastest 0.041-0.046; a single JAX loop 0.029-0.039 ms, the fastest of 5 0.0284-0.0289.
CALIBRATION_STAN_RUNS, CALIBRATION_JAX_TRIES = 3, 5


def calibrate(cpus: list[int] | None = None) -> tuple[list[dict], dict]:
    """The fixed calibration (``CALIBRATION``): Stan's gradient cost (the fastest of ``CALIBRATION_STAN_RUNS``
    fresh runs) and JAX's (the fastest of ``CALIBRATION_JAX_TRIES``), each on its ``DEFAULT_CLOCK`` (the clocks
    every earlier calibration was measured on: it tells machines apart, and compares no sides), on one core
    (``cpus[0]``, else the first this process may use), and the other work on that core meanwhile
    (:func:`stanjax.runner.measure.jobs.machine_load`): a calibration measured beside other work is kept, and tells
    no machine apart."""
    from stanjax.runner.measure.jobs import load_sample, machine_load

    core = [(cpus or sorted(os.sched_getaffinity(0)))[0]]
    model_id, size = CALIBRATION
    before, start = load_sample(core), time.perf_counter()
    before["ours_s"] += _children_cpu_s()
    runs = sorted(
        (measure("stan", model_id, size, cpus=core) for _ in range(CALIBRATION_STAN_RUNS)),
        key=lambda row: row["ms_per_gradient"],
    )
    stan = {**runs[0], "runs_ms": [row["ms_per_gradient"] for row in runs]}
    tries = ("--tries", str(CALIBRATION_JAX_TRIES))
    jax = measure("jax", model_id, size, cpus=core, env={"JAX_PLATFORMS": "cpu"}, options=tries)
    after = load_sample(core)  # the measuring processes are children this process reaped: their time is ours
    after["ours_s"] += _children_cpu_s()
    return [stan, jax], machine_load(before, after, time.perf_counter() - start)


def _children_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    if os.environ.get("STANJAX_CPUS"):
        os.sched_setaffinity(0, [int(cpu) for cpu in os.environ["STANJAX_CPUS"].split(",")])
    if argv[:1] == ["--batch"]:  # setups (JSON) of one side, device and precision: a JSON line each, as measured
        for setup in json.loads(argv[1]):
            try:
                row = {**measure_one(setup), "size": setup["size"]}
            except Exception as err:  # one setup's failure (out of memory, say) is its row; the rest go on
                row = {**setup, "error": f"{type(err).__name__}: {err}"[:300]}
            print(json.dumps(row), flush=True)
        return 0
    parser = argparse.ArgumentParser(prog="python -m stanjax.runner.measure.gradient_cost", description=__doc__)
    parser.add_argument("side", choices=("stan", "jax"))
    parser.add_argument("model_id")
    parser.add_argument("size")
    parser.add_argument("n", nargs="?", type=int, help="the model's N (its n_key) in place of the size's")
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--precision", default="float64", choices=("float64", "float32"))
    parser.add_argument("--chains", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="Stan: threads a chain (the reduce_sum program)")
    parser.add_argument("--program", default="", help='Stan: which of its programs ("", "expert", "O1", ...)')
    parser.add_argument(
        "--clock", choices=CLOCKS, help="loop (a compiled loop) or nuts (inside its NUTS); default: the side's own"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        help=f"loop clock: gradients in the compiled loop (default: {gradient_clocks.LOOP_REPEATS}, more where they "
        f"take under {gradient_clocks.LOOP_MIN_S} s)",
    )
    parser.add_argument(
        "--tries", type=int, default=1, help="loop clock: fresh copies of the inputs (Stan: of the model), the fastest"
    )
    args = parser.parse_args(argv)
    resize = ((models.get(args.model_id).n_key, args.n),) if args.n else ()
    clock = args.clock or DEFAULT_CLOCK[args.side]
    row = cost(
        args.side,
        clock,
        args.model_id,
        args.size,
        resize,
        args.device,
        args.precision,
        args.chains,
        args.threads,
        args.program,
        args.repeats,
        args.tries,
    )
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
