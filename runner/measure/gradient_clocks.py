"""The two clocks a log density + gradient is timed on, each side on both (DESIGN: "per-gradient cost on equal
clocks"; never one side one way and the other the other):

- ``loop``: in a compiled loop outside any sampler, at the same point on both sides. JAX: the potential and its
  gradient, ``vmap(value_and_grad)`` over ``chains`` points, data as arguments, in one jitted loop. Stan: the
  model built once on the data and ``log_prob_grad<true, true>`` looped in C++
  (:mod:`stanjax.runner.engines.stan_loop`).
  The point is JAX's start (NumPyro's uniform initialisation, fixed key), taken to the constrained scale and
  unconstrained by Stan's own transforms (where the two sides' transforms differ, a simplex say, the two
  unconstrained vectors differ and the constrained point is the one both share).
- ``nuts``: inside each side's NUTS, one chain of a short run with trees of depth at most ``NUTS_TREEDEPTH``: the
  sampler's own clock ÷ its leapfrog steps (Stan's sampling clock; NumPyro's sampling phase, compiled first), so
  per-step and per-draw costs (momenta, writing draws) are spread over at most 7 gradients on both sides.

Measurements made before the clocks were named read as the clock they were (``DEFAULT_CLOCK``: Stan ``nuts``, JAX
``loop``), which the campaign calibration and the run-time estimates keep measuring, so that a machine's calibrations
stay comparable across campaigns.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from stanjax import jax_models, models
from stanjax.runner.core.config import Placement, RunConfig, stanc_options

CLOCKS = ("loop", "nuts")
DEFAULT_CLOCK = {"stan": "nuts", "jax": "loop"}
CLOCK_WORDS = {"loop": "in a compiled loop", "nuts": "inside its NUTS"}  # a figure's line names its clock so

# The short run a gradient is timed inside, either side's NUTS: a few warmup iterations, then draws with trees of at
# most 2^NUTS_TREEDEPTH - 1 steps (a leapfrog step costs what it costs at any depth; an unadapted chain's trees of
# 1,023 steps would make the calibration of a large model take minutes), draws grown until the sampler's clock reads
# at least NUTS_MIN_S.
NUTS_WARMUP, NUTS_DRAWS, NUTS_TREEDEPTH, NUTS_MIN_S, NUTS_MAX_DRAWS = 10, 40, 3, 0.5, 20_000
LOOP_REPEATS = 200  # gradients in one compiled loop, at least (either side's)
# ... and more where 200 take less than this: 200 of a 0.6 microsecond gradient were a 0.12 ms loop, and the
# survey's rounds of such gradients differed up to 2.3x
LOOP_MIN_S, LOOP_MAX_REPEATS = 0.05, 1_000_000
TIMINGS = 5  # of that loop: the median is taken
POINT_KEY = 0  # the loop clock's points: NumPyro's initialisation with this key


def clock_of(measurement: dict) -> str:
    """The clock a gradient cost was measured on; one made before the field existed, the clock its side then had."""
    return measurement.get("clock") or DEFAULT_CLOCK[measurement["side"]]


def loop_points(jax, spec, data: dict, config: RunConfig):
    """The loop clock's points, one a chain, with the model's potential and constraining functions and the data's
    arrays (:func:`stanjax.runner.engines.jax_setup.model_functions`)."""
    from stanjax.runner.engines.jax_setup import model_functions

    return model_functions(jax, jax_models.load(spec.jax_file), data, config, jax.random.key(POINT_KEY))


def stan_point(spec, data: dict, resize: tuple, size: str) -> dict:
    """The loop clock's point for Stan: JAX's first (one chain), constrained, each parameter shaped as Stan
    declares it (JAX started on the CPU in float64 for it: a process that measures Stan's loop never forks)."""
    from stanjax.runner.engines.jax_setup import start_jax

    jax = start_jax(Placement("cpu", "float64", "vectorized"), 1)
    points, _, constrain_of, arrays = loop_points(jax, spec, data, RunConfig(size=size, chains=1, resize=resize))
    constrained = constrain_of(arrays)(jax.tree.map(lambda x: x[0], points))
    return {p.name: np.reshape(np.asarray(constrained[p.name]), p.resolve_shape(data)) for p in spec.parameters}


def jax_loop(
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
    process, and the seconds its compilation took; ``repeats`` gradients a loop, by default ``LOOP_REPEATS`` or
    more, as many as take ``LOOP_MIN_S``. With ``tries`` > 1 the loop is timed on that many fresh copies of
    its inputs, the fastest kept: on the Zen 4 EPYC one copy's loop ran at 0.029 or 0.039 ms a gradient, by
    chance, and stayed there (the calibration, which tells machines apart, takes the fastest of 5)."""
    from stanjax.runner.engines.jax_setup import start_jax

    spec = models.get(model_id)
    jax = start_jax(Placement(device, precision, "vectorized"), chains)
    config = RunConfig(size=size, chains=chains, resize=resize)
    points, potential_of, _, arrays = loop_points(jax, spec, spec.data(size, config.data_seed(), resize), config)
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

    fixed, repeats = repeats is not None, repeats or LOOP_REPEATS
    start = time.perf_counter()
    compiled = loop(repeats)
    compile_s = time.perf_counter() - start
    timed(compiled)  # the first call carries one-time costs: it sized the loop too short under load
    # a loop long enough to time: more gradients in it until the fastest of three calls takes LOOP_MIN_S
    while not fixed and repeats < LOOP_MAX_REPEATS and (loop_s := min(timed(compiled) for _ in range(3))) < LOOP_MIN_S:
        repeats = min(LOOP_MAX_REPEATS, int(repeats * 1.5 * LOOP_MIN_S / max(loop_s, 1e-6)) + 1)
        compiled = loop(repeats)
        timed(compiled)
    tries_ms: list[float] = []
    for _ in range(tries):
        if tries_ms:  # a fresh copy of the point and the data, where the loop may run at another speed
            points, arrays = jax.device_put(jax.tree.map(np.array, (points, arrays)))
            timed(compiled)
        tries_ms.append(statistics.median(timed(compiled) / repeats for _ in range(TIMINGS)) * 1e3)
    return {
        **_row("jax", "loop", spec, size, resize, chains),
        "device": jax.default_backend() if jax.default_backend() == "cpu" else "gpu",
        "precision": precision,
        "ms_per_gradient": min(tries_ms),
        "compile_s": compile_s,
        "repeats": repeats,
        **({"tries_ms": tries_ms} if tries > 1 else {}),
        "how": f"median of {TIMINGS} timings of {repeats} jit(vmap(value_and_grad)) calls in one compiled loop (at "
        f"least {LOOP_REPEATS} unless fixed, more where they took under {LOOP_MIN_S} s), data as arguments"
        + (f"; the fastest of {tries} fresh copies of the inputs" if tries > 1 else ""),
    }


def jax_nuts(
    model_id: str, size: str, resize: tuple = (), device: str = "cpu", precision: str = "float64", chains: int = 1
) -> dict:
    """ms a leapfrog step of NumPyro's NUTS costs (the NumPyro engine, ``NUTS_*``'s run: its sampling phase,
    compiled ahead, ÷ its leapfrog steps), and its compile seconds. ``chains`` > 1 are one vectorised batch, whose
    every step waits for the longest of its chains' trees: the steps counted are each draw's most."""
    from stanjax.runner.core.engine_registry import get_engine

    spec = models.get(model_id)
    engine = get_engine("numpyro")
    placement = Placement(device, precision, "vectorized" if chains > 1 else "parallel")
    handle, data, draws = engine.compile(spec, placement), spec.data(size, RunConfig().data_seed(), resize), NUTS_DRAWS
    while True:
        config = RunConfig(
            size=size, chains=chains, warmup=NUTS_WARMUP, draws=draws, max_treedepth=NUTS_TREEDEPTH, resize=resize
        )
        result = engine.sample(handle, data, config, 1, placement)
        seconds = result.timings.sampling_s
        if seconds >= NUTS_MIN_S or draws >= NUTS_MAX_DRAWS:
            break
        draws = min(NUTS_MAX_DRAWS, int(draws * 1.5 * NUTS_MIN_S / max(seconds, 1e-3)) + 1)
    steps = int(np.asarray(result.stats.n_leapfrog).max(axis=0).sum())
    return {
        **_row("jax", "nuts", spec, size, resize, chains),
        "device": device,
        "precision": precision,
        "ms_per_gradient": seconds / steps * 1e3,
        "compile_s": result.timings.compile_s,
        "leapfrog_steps": steps,
        "how": f"NumPyro's sampling clock ÷ its leapfrog steps, {chains} chain(s) of {NUTS_WARMUP} + {draws}, trees "
        f"of at most depth {NUTS_TREEDEPTH}",
    }


def stan_loop(
    model_id: str,
    size: str,
    resize: tuple = (),
    threads: int = 1,
    program: str = "",
    repeats: int | None = None,
    tries: int = 1,
) -> dict:
    """ms a ``log_prob_grad<true, true>`` call costs in the program's compiled loop (the driver built once per
    program and build, at the loop clock's point; sized as JAX's loop), and the driver's build seconds."""
    from stanjax.runner.engines import stan, stan_loop

    spec = models.get(model_id)
    placement = Placement(threads_per_chain=threads, program=program)
    driver = stan_loop.build(stan.program(spec, placement), placement.isa, stanc_options(program))
    data = spec.data(size, RunConfig().data_seed(), resize)
    point = stan_point(spec, data, resize, size)
    if threads > 1:
        data = {**data, "grainsize": stan.GRAINSIZE}
    found = stan_loop.timed(
        driver, data, point, repeats or LOOP_REPEATS, 0.0 if repeats else LOOP_MIN_S, LOOP_MAX_REPEATS, TIMINGS, tries
    )
    return {
        **_row("stan", "loop", spec, size, resize, 1, threads, program),
        "ms_per_gradient": found.ms_per_gradient,
        "compile_s": driver.compile_s,
        "repeats": found.repeats,
        **({"tries_ms": found.tries_ms} if tries > 1 else {}),
        "how": f"median of {TIMINGS} timings of {found.repeats} log_prob_grad<true, true> calls in one compiled C++ "
        f"loop (at least {LOOP_REPEATS} unless fixed, more where they took under {LOOP_MIN_S} s), the model "
        f"built once on the data, at JAX's starting point unconstrained by Stan's transforms"
        + (f"; the fastest of {tries} fresh models and points" if tries > 1 else ""),
    }


def stan_nuts(model_id: str, size: str, resize: tuple = (), threads: int = 1, program: str = "") -> dict:
    """ms a leapfrog step of Stan's NUTS costs (one chain, ``NUTS_*``), and its compile seconds; ``program``: which
    of the model's Stan programs (``Placement.program``: "" its own, "expert" its rewrite)."""
    from stanjax.runner.core.engine_registry import get_engine

    spec = models.get(model_id)
    engine = get_engine("stan")
    placement = Placement(threads_per_chain=threads, program=program)
    start = time.perf_counter()
    handle = engine.compile(spec, placement)
    compile_s = time.perf_counter() - start
    data, draws = spec.data(size, RunConfig().data_seed(), resize), NUTS_DRAWS
    while True:
        config = RunConfig(
            size=size, chains=1, warmup=NUTS_WARMUP, draws=draws, max_treedepth=NUTS_TREEDEPTH, resize=resize
        )
        result = engine.sample(handle, data, config, 1, placement)
        seconds = result.timings.sampling_s
        if seconds >= NUTS_MIN_S or draws >= NUTS_MAX_DRAWS:
            break
        draws = min(NUTS_MAX_DRAWS, int(draws * 1.5 * NUTS_MIN_S / max(seconds, 1e-3)) + 1)
    steps = int(result.stats.n_leapfrog.sum())
    return {
        **_row("stan", "nuts", spec, size, resize, 1, threads, program),
        "ms_per_gradient": result.timings.sampling_s / steps * 1e3,
        "compile_s": compile_s,
        "leapfrog_steps": steps,
        "how": f"Stan's sampling clock ÷ its leapfrog steps, one chain of {NUTS_WARMUP} + {draws}, trees of at "
        f"most depth {NUTS_TREEDEPTH}",
    }


def _row(side: str, clock: str, spec, size: str, resize: tuple, chains: int, threads: int = 1, program: str = ""):
    """What every measurement of a gradient cost says: the side and clock, the model and sizes, the chains one call
    computes, Stan's threads a chain (and program), and the cores this process had (chains that fit run at once;
    XLA's CPU threads are the process's cores)."""
    return {
        "side": side,
        "clock": clock,
        "model_id": spec.id,
        "sizes": spec.size_kwargs(size, resize),
        "device": "cpu",
        "precision": "float64",
        "chains": chains,
        "threads": threads,
        **({"program": program} if side == "stan" else {}),
        "cpu_threads": len(os.sched_getaffinity(0)),
    }
