"""What one log density + gradient costs, each side measured as its sampler computes it: seconds before any
sampling, so a plan can be measured before it is made and two machines of one name can be told apart.

- JAX: the model's potential and its gradient, ``vmap(value_and_grad)`` over ``chains`` points with the data as
  arguments (as the NumPyro engine runs it), ``repeats`` of them in one compiled loop (as inside a sampler: a
  call's dispatch, ~0.1 ms, would swamp a small model's gradient); the median of ``TIMINGS`` loops.
- Stan: its gradient timed inside its NUTS: one chain of a short run through the Stan engine; Stan's own
  sampling clock ÷ the leapfrog steps it took (no call from Python into a gradient exists outside a sampler
  that costs what a leapfrog step costs).

``python -m stanjax.runner.gradient_cost SIDE MODEL SIZE [N]`` measures one in a fresh process (the device,
precision and cores are fixed when JAX starts) and prints one JSON line; :func:`measure` runs that process.
``STANJAX_CPUS`` pins it, as for the studies' measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from stanjax import jax_models, models
from stanjax.models import ROOT
from stanjax.runner import environment
from stanjax.runner.config import Placement, RunConfig

STAN_ITERATIONS = (150, 150)  # warmup, draws of the short Stan run a gradient is timed inside
JAX_REPEATS = 200  # gradients in one compiled loop
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
    repeats: int = JAX_REPEATS,
) -> dict:
    """ms a call of the potential and its gradient over ``chains`` points (one vectorised call), in this
    process, and the seconds its compilation took."""
    from stanjax.runner.engines.jax_setup import model_functions, start_jax

    spec = models.get(model_id)
    jax = start_jax(Placement(device, precision, "vectorized"), chains)
    config = RunConfig(size=size, chains=chains, resize=resize)
    points, potential_of, _, arrays = model_functions(
        jax, jax_models.load(spec.model_name), spec.data(size, config.data_seed(), resize), config, jax.random.key(0)
    )
    energy = jax.vmap(jax.value_and_grad(lambda z, arrays: potential_of(arrays)(z)), in_axes=(0, None))

    def steps(z, arrays):
        """``repeats`` gradients in one compiled loop, each at a point moved by the last gradient (as a leapfrog
        step moves it), so none can be hoisted out of the loop and no call's dispatch is timed."""

        def step(_, carry):
            z, total = carry
            value, gradient = energy(z, arrays)
            return jax.tree.map(lambda x, g: x - 1e-9 * g, z, gradient), total + value.sum()

        return jax.lax.fori_loop(0, repeats, step, (z, 0.0))

    start = time.perf_counter()
    compiled = jax.jit(steps).lower(points, arrays).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(points, arrays))
    seconds = []
    for _ in range(TIMINGS):
        start = time.perf_counter()
        jax.block_until_ready(compiled(points, arrays))
        seconds.append((time.perf_counter() - start) / repeats)
    return {
        "side": "jax",
        "model_id": model_id,
        "sizes": spec.size_kwargs(size, resize),
        "device": jax.default_backend() if jax.default_backend() == "cpu" else "gpu",
        "precision": precision,
        "chains": chains,
        "threads": len(os.sched_getaffinity(0)),
        "ms_per_gradient": statistics.median(seconds) * 1e3,
        "compile_s": compile_s,
        "repeats": repeats,
        "how": f"median of {TIMINGS} timings of {repeats} jit(vmap(value_and_grad)) calls in one compiled loop, "
        "data as arguments",
    }


def stan_gradient(model_id: str, size: str, resize: tuple = (), threads: int = 1) -> dict:
    """ms a leapfrog step of Stan's NUTS costs (one chain of ``STAN_ITERATIONS``), and its compile seconds."""
    from stanjax.runner.engines import get_engine

    spec = models.get(model_id)
    engine = get_engine("stan")
    placement = Placement(threads_per_chain=threads)
    start = time.perf_counter()
    handle = engine.compile(spec, placement)
    compile_s = time.perf_counter() - start
    warmup, draws = STAN_ITERATIONS
    config = RunConfig(size=size, chains=1, warmup=warmup, draws=draws, resize=resize)
    result = engine.sample(handle, spec.data(size, config.data_seed(), resize), config, 1, placement)
    steps = int(result.stats.n_leapfrog.sum())
    return {
        "side": "stan",
        "model_id": model_id,
        "sizes": spec.size_kwargs(size, resize),
        "device": "cpu",
        "precision": "float64",
        "chains": 1,
        "threads": threads,
        "ms_per_gradient": result.timings.sampling_s / steps * 1e3,
        "compile_s": compile_s,
        "leapfrog_steps": steps,
        "how": f"Stan's sampling clock ÷ its leapfrog steps, one chain of {warmup} + {draws}",
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
    done = subprocess.run(
        [sys.executable, "-m", "stanjax.runner.gradient_cost", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**environment.worker_env(), **extra, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(f"gradient cost {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def calibrate(cpus: list[int] | None = None) -> list[dict]:
    """The fixed calibration (``CALIBRATION``): Stan's and JAX's gradient cost on one core (``cpus[0]``, else
    the first this process may use)."""
    core = [(cpus or sorted(os.sched_getaffinity(0)))[0]]
    model_id, size = CALIBRATION
    return [measure(side, model_id, size, cpus=core, env={"JAX_PLATFORMS": "cpu"}) for side in ("stan", "jax")]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m stanjax.runner.gradient_cost", description=__doc__)
    parser.add_argument("side", choices=("stan", "jax"))
    parser.add_argument("model_id")
    parser.add_argument("size")
    parser.add_argument("n", nargs="?", type=int, help="the model's N (its n_key) in place of the size's")
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--precision", default="float64", choices=("float64", "float32"))
    parser.add_argument("--chains", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="Stan: threads a chain (the reduce_sum program)")
    parser.add_argument("--repeats", type=int, default=JAX_REPEATS, help="JAX: gradients in the compiled loop")
    args = parser.parse_args(argv)
    if os.environ.get("STANJAX_CPUS"):
        os.sched_setaffinity(0, [int(cpu) for cpu in os.environ["STANJAX_CPUS"].split(",")])
    resize = ((models.get(args.model_id).n_key, args.n),) if args.n else ()
    if args.side == "jax":
        row = jax_gradient(args.model_id, args.size, resize, args.device, args.precision, args.chains, args.repeats)
    else:
        row = stan_gradient(args.model_id, args.size, resize, args.threads)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
