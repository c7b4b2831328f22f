"""What one log density + gradient costs, each side measured as its sampler computes it: seconds before any
sampling, so a plan can be measured before it is made and two machines of one name can be told apart.

- JAX: the model's potential and its gradient, ``vmap(value_and_grad)`` over ``chains`` points with the data as
  arguments (as the NumPyro engine runs it), ``repeats`` of them in one compiled loop (as inside a sampler: a
  call's dispatch, ~0.1 ms, would swamp a small model's gradient), more where the loop is shorter than
  ``JAX_MIN_LOOP_S``; the median of ``TIMINGS`` loops, over each of ``tries`` fresh copies of the inputs the fastest.
- Stan: its gradient timed inside its NUTS: one chain of a short run through the Stan engine; Stan's own
  sampling clock ÷ the leapfrog steps it took (no call from Python into a gradient exists outside a sampler
  that costs what a leapfrog step costs).

``python -m stanjax.runner.measure.gradient_cost SIDE MODEL SIZE [N]`` measures one in a fresh process (the device,
precision and cores are fixed when JAX starts) and prints one JSON line; :func:`measure` runs that process.
``STANJAX_CPUS`` pins it, as for the studies' measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from stanjax import jax_models, models
from stanjax.runner.core import environment
from stanjax.runner.core.config import Placement, RunConfig

# The short Stan run a gradient is timed inside: a few warmup iterations, then draws with trees of at most
# 2^STAN_TREEDEPTH - 1 steps (a leapfrog step costs what it costs at any depth; an unadapted chain's trees of
# 1,023 steps would make the calibration of a large model take minutes), draws grown until Stan's clock reads
# at least STAN_MIN_S.
STAN_WARMUP, STAN_DRAWS, STAN_TREEDEPTH, STAN_MIN_S, STAN_MAX_DRAWS = 10, 40, 3, 0.5, 20_000
JAX_REPEATS = 200  # gradients in one compiled loop, at least
# ... and more where 200 take less than this: 200 of a 0.6 microsecond gradient were a 0.12 ms loop, and the
# survey's rounds of such gradients differed up to 2.3x
JAX_MIN_LOOP_S, JAX_MAX_REPEATS = 0.05, 1_000_000
TIMINGS = 5  # of that loop: the median is taken

# The fixed calibration a campaign starts with: one model and size, each side on one core, the same everywhere.
CALIBRATION = ("covtype_synth-logistic_regression", "small")


def jax_gradient(
    model_id: str,
    size: str,
    resize: tuple = (),
    device: str = "cpu",
    precision: str = "float64",
    chains: int = 1,
    repeats: int | None = None,
    tries: int = 1,
) -> dict:
    """ms a call of the potential and its gradient over ``chains`` points (one vectorised call), in this
    process, and the seconds its compilation took; ``repeats`` gradients a loop, by default ``JAX_REPEATS`` or
    more, as many as take ``JAX_MIN_LOOP_S``. With ``tries`` > 1 the loop is timed on that many fresh copies of
    its inputs, the fastest kept: on the Zen 4 EPYC one copy's loop ran at 0.029 or 0.039 ms a gradient, by
    chance, and stayed there (the calibration, which tells machines apart, takes the fastest of 5)."""
    from stanjax.runner.engines.jax_setup import model_functions, start_jax

    spec = models.get(model_id)
    jax = start_jax(Placement(device, precision, "vectorized"), chains)
    config = RunConfig(size=size, chains=chains, resize=resize)
    points, potential_of, _, arrays = model_functions(
        jax, jax_models.load(spec.jax_file), spec.data(size, config.data_seed(), resize), config, jax.random.key(0)
    )
    energy = jax.vmap(jax.value_and_grad(lambda z, arrays: potential_of(arrays)(z)), in_axes=(0, None))

    def loop(repeats: int):
        def steps(z, arrays):
            """``repeats`` gradients in one compiled loop, each at the starting point moved by the last gradient
            (as a leapfrog step moves it), so none can be hoisted out of the loop and no call's dispatch is timed.
            Moved from the start, not from the last point: accumulated over 5,000 steps the moves carried
            Lotka-Volterra's parameters where its ODE is stiff, and its gradient cost 600x."""

            def step(_, carry):
                z, total = carry
                value, gradient = energy(z, arrays)
                return jax.tree.map(lambda x, g: x - 1e-9 * g, start, gradient), total + value.sum()

            start = z
            return jax.lax.fori_loop(0, repeats, step, (z, 0.0))

        return jax.jit(steps).lower(points, arrays).compile()

    def timed(compiled) -> float:
        start = time.perf_counter()
        jax.block_until_ready(compiled(points, arrays))
        return time.perf_counter() - start

    fixed, repeats = repeats is not None, repeats or JAX_REPEATS
    start = time.perf_counter()
    compiled = loop(repeats)
    compile_s = time.perf_counter() - start
    timed(compiled)  # the first call carries one-time costs: it sized the loop too short under load
    # a loop long enough to time: more gradients in it until the fastest of three calls takes JAX_MIN_LOOP_S
    while (
        not fixed and repeats < JAX_MAX_REPEATS and (loop_s := min(timed(compiled) for _ in range(3))) < JAX_MIN_LOOP_S
    ):
        repeats = min(JAX_MAX_REPEATS, int(repeats * 1.5 * JAX_MIN_LOOP_S / max(loop_s, 1e-6)) + 1)
        compiled = loop(repeats)
        timed(compiled)
    tries_ms: list[float] = []
    for _ in range(tries):
        if tries_ms:  # a fresh copy of the point and the data, where the loop may run at another speed
            points, arrays = jax.device_put(jax.tree.map(np.array, (points, arrays)))
            timed(compiled)
        tries_ms.append(statistics.median(timed(compiled) / repeats for _ in range(TIMINGS)) * 1e3)
    return {
        "side": "jax",
        "model_id": model_id,
        "sizes": spec.size_kwargs(size, resize),
        "device": jax.default_backend() if jax.default_backend() == "cpu" else "gpu",
        "precision": precision,
        "chains": chains,
        "threads": 1,  # Stan's threads a chain; XLA's CPU threads are the process's cores:
        "cpu_threads": len(os.sched_getaffinity(0)),
        "ms_per_gradient": min(tries_ms),
        "compile_s": compile_s,
        "repeats": repeats,
        **({"tries_ms": tries_ms} if tries > 1 else {}),
        "how": f"median of {TIMINGS} timings of {repeats} jit(vmap(value_and_grad)) calls in one compiled loop (at "
        f"least {JAX_REPEATS} unless fixed, more where they took under {JAX_MIN_LOOP_S} s), data as arguments"
        + (f"; the fastest of {tries} fresh copies of the inputs" if tries > 1 else ""),
    }


def stan_gradient(model_id: str, size: str, resize: tuple = (), threads: int = 1, program: str = "") -> dict:
    """ms a leapfrog step of Stan's NUTS costs (one chain, ``STAN_*``), and its compile seconds; ``program``: which
    of the model's Stan programs (``Placement.program``: "" its own, "expert" its rewrite)."""
    from stanjax.runner.core.engine_registry import get_engine

    spec = models.get(model_id)
    engine = get_engine("stan")
    placement = Placement(threads_per_chain=threads, program=program)
    start = time.perf_counter()
    handle = engine.compile(spec, placement)
    compile_s = time.perf_counter() - start
    data, draws = spec.data(size, RunConfig().data_seed(), resize), STAN_DRAWS
    while True:
        config = RunConfig(
            size=size, chains=1, warmup=STAN_WARMUP, draws=draws, max_treedepth=STAN_TREEDEPTH, resize=resize
        )
        result = engine.sample(handle, data, config, 1, placement)
        seconds = result.timings.sampling_s
        if seconds >= STAN_MIN_S or draws >= STAN_MAX_DRAWS:
            break
        draws = min(STAN_MAX_DRAWS, int(draws * 1.5 * STAN_MIN_S / max(seconds, 1e-3)) + 1)
    steps = int(result.stats.n_leapfrog.sum())
    return {
        "side": "stan",
        "model_id": model_id,
        "sizes": spec.size_kwargs(size, resize),
        "device": "cpu",
        "precision": "float64",
        "chains": 1,
        "threads": threads,
        "program": program,
        "cpu_threads": len(os.sched_getaffinity(0)),  # the cores this process had: chains that fit run at once
        "ms_per_gradient": result.timings.sampling_s / steps * 1e3,
        "compile_s": compile_s,
        "leapfrog_steps": steps,
        "how": f"Stan's sampling clock ÷ its leapfrog steps, one chain of {STAN_WARMUP} + {draws}, trees of at "
        f"most depth {STAN_TREEDEPTH}",
    }


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
    chain. Equal setups are measured once; an estimate finds its setup's cost by it."""
    from stanjax.runner.core.engine_registry import STAN, family

    stan = family(job.engine) == STAN
    spec = models.get(job.model_id)
    return {
        "side": "stan" if stan else "jax",
        "model_id": job.model_id,
        "size": job.config.size,
        "sizes": spec.size_kwargs(job.config.size, job.config.resize),
        "device": job.device,
        "precision": job.placement.precision,
        "chains": job.config.chains if job.placement.chain_method == "vectorized" else 1,
        "threads": job.placement.threads_per_chain if stan else 1,
    }


def setup_key(row: dict) -> str:
    """A setup (or a measurement of one) as one string, for lookups."""
    names = ("side", "model_id", "sizes", "device", "precision", "chains", "threads")
    return json.dumps({**{name: row[name] for name in names}, "program": row.get("program", "")}, sort_keys=True)


def measure_one(setup: dict) -> dict:
    """One setup's cost, in this process (JAX started for the setup's device and precision)."""
    spec = models.get(setup["model_id"])
    resize = tuple(
        (name, value) for name, value in setup["sizes"].items() if spec.sizes[setup["size"]].get(name) != value
    )
    if setup["side"] == "stan":
        return stan_gradient(setup["model_id"], setup["size"], resize, setup["threads"], setup.get("program", ""))
    return jax_gradient(setup["model_id"], setup["size"], resize, setup["device"], setup["precision"], setup["chains"])


def measure_setups(setups: list[dict], cpus: list[int] | None = None, timeout_s: float = 1800, say=print) -> list[dict]:
    """Every setup's cost, one fresh process for each side, device and precision (JAX starts once a process),
    each pinned to ``cpus``; a setup that fails is said and left out."""
    groups: dict[tuple, list[dict]] = {}
    for setup in {setup_key(s): s for s in setups}.values():
        groups.setdefault((setup["side"], setup["device"], setup["precision"]), []).append(setup)
    found = []
    for (side, device, precision), group in groups.items():
        platform = "cuda" if device == "gpu" else "cpu"
        env = {"JAX_PLATFORMS": platform, **({"STANJAX_CPUS": ",".join(map(str, cpus))} if cpus else {})}
        done = environment.run_module(
            "stanjax.runner.measure.gradient_cost", ["--batch", json.dumps(group)], env, timeout_s
        )
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        found += [row for row in rows if "error" not in row]
        for row in rows:
            say(
                f"gradient cost {row.get('side')} {row.get('device')} {row.get('precision')} {row.get('model_id')} "
                f"{row.get('sizes')}: "
                + (f"FAILED: {row['error']}" if "error" in row else f"{row['ms_per_gradient']:.4g} ms")
            )
        if done.returncode != 0 and not rows:
            say(f"gradient costs of {side} on {device} ({precision}) failed: {done.stderr.strip().splitlines()[-1:]}")
    return found


# Tries of each side, the fastest kept (other work and chance only ever add time): Stan's in fresh processes, JAX's
# on fresh copies of its inputs in one process. The median of 3 Stan runs had ranged 0.041-0.054 ms on one machine,
# their fastest 0.041-0.046; a single JAX loop 0.029-0.039 ms, the fastest of 5 0.0284-0.0289.
CALIBRATION_STAN_RUNS, CALIBRATION_JAX_TRIES = 3, 5


def calibrate(cpus: list[int] | None = None) -> tuple[list[dict], dict]:
    """The fixed calibration (``CALIBRATION``): Stan's gradient cost (the fastest of ``CALIBRATION_STAN_RUNS``
    fresh runs) and JAX's (the fastest of ``CALIBRATION_JAX_TRIES``) on one core (``cpus[0]``, else the first this
    process may use), and the other work on that core meanwhile (:func:`stanjax.runner.measure.jobs.machine_load`): a calibration measured beside other work
    is kept, and tells no machine apart."""
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
    parser.add_argument(
        "--repeats",
        type=int,
        help=f"JAX: gradients in the compiled loop (default: {JAX_REPEATS}, more where they take under "
        f"{JAX_MIN_LOOP_S} s)",
    )
    parser.add_argument("--tries", type=int, default=1, help="JAX: fresh copies of the inputs, the fastest kept")
    args = parser.parse_args(argv)
    resize = ((models.get(args.model_id).n_key, args.n),) if args.n else ()
    if args.side == "jax":
        row = jax_gradient(
            args.model_id, args.size, resize, args.device, args.precision, args.chains, args.repeats, args.tries
        )
    else:
        row = stan_gradient(args.model_id, args.size, resize, args.threads)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
