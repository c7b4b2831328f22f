"""Milliseconds per gradient of Stan and JAX on one core, float64, default sizes: how much of a speed ratio is
the build (compiler flags, instruction set) and not the engine.

    .venv/bin/python benchmarks/per_gradient.py                  # the four models below, 5 repetitions
    .venv/bin/python benchmarks/per_gradient.py --models gym_sp500-stochastic_volatility_sp500 --reps 9 \\
        --program gym_sp500-stochastic_volatility_sp500=/tmp/old.stan   # another Stan program for a model
    .venv/bin/python benchmarks/per_gradient.py --models sv_synth-stochastic_volatility --reps 7 \\
        --alt sv_synth-stochastic_volatility=/tmp/old.stan --columns stan:native:loop   # old and new, interleaved

``--alt ID=PATH`` adds a row for model ID timed with PATH, interleaved with the model's own row: a .stan program
in the Stan columns, or a .py file defining the NumPyro model's function (named as the model) in the JAX columns;
``--columns`` keeps only some columns (KIND:BUILD:CLOCK, e.g. ``stan:native:loop jax:native:loop``). ``--init-radius`` sets Stan's
(default 2): where NUTS from Stan's usual inits diverges at once (sv_synth: one leapfrog an iteration), the
per-iteration costs swamp the gradient's, and a smaller radius (0.5) gives full trees; the worker warns below 10
leapfrogs an iteration.

Columns, each the median over interleaved repetitions (repetition r of every column, in an order rotated each
repetition, before repetition r + 1, so drift hits every column alike), each on one of two clocks, both sides on
both (DESIGN's equal clocks; compare a column with the other side's on the same clock only):

- Stan as built (NUTS): the program as httpstan builds it unasked (-O3, no -march: baseline x86-64, SSE2, no AVX),
  the bundled Stan engine's build before it chose an ISA;
- Stan -march=native (NUTS): the engine's build for the host's ISA (``HttpstanBackend.compile``);
- Stan -march=native, stanc --O1 (NUTS): the same, translated with stanc's optimiser (``--stan-programs model-O1``);
- Stan -march=native (loop): the same build's flags, the model built once and ``log_prob_grad<true, true>`` looped
  in C++ (``runner/engines/stan_loop.py``), at JAX's starting point;
- JAX (host ISA) (loop): the NumPyro model's potential, ``value_and_grad`` jitted, XLA's default (the host's ISA);
- JAX (SSE4.2) (loop): the same with XLA's CPU ISA capped at SSE4.2 (``--xla_cpu_max_isa``, read once at start-up,
  so in its own process);
- JAX (host ISA) (NUTS): NumPyro's NUTS kernel, as Stan's below.

Inside NUTS (the NUTS clock): each repetition runs one chain without warmup (step size from each sampler's initial
heuristic, tree depth at most ``MAX_DEPTH``) and divides the sampler's own clock by the leapfrog steps it took, one
gradient each. That includes NUTS's per-step vector updates, O(parameters), and its per-iteration costs (a momentum
draw, writing the draw and its diagnostics) spread over the iteration's steps. In a compiled loop (the loop clock):
gradient evaluations one after another, each step moving the point by a negligible multiple of the gradient (so
XLA can drop none), the loop timed and divided by its steps; no per-call dispatch, no sampler.

Every side runs in its own worker process pinned to one core (``--core``; XLA's and TBB's pools size themselves
from it); Stan's worker never loads JAX, since its NUTS forks. Compiles (Stan, ~40-60 s a program not yet in
httpstan's cache; XLA) happen before the first repetition and are not timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = (
    "covtype_synth-logistic_regression",
    "tennis_synth-bradley_terry_hierarchical",
    "mixture_synth-gaussian_mixture",
    "gym_sp500-stochastic_volatility_sp500",
)
# (column heading, worker, build, clock): Stan's builds are "baseline" (httpstan's own flags) or an ISA, "+O1"
# added: translated with stanc's optimiser; JAX's an ISA; the clock "nuts" (inside NUTS) or "loop" (a compiled loop).
COLUMNS = (
    ("Stan as built (NUTS)", "stan", "baseline", "nuts"),
    ("Stan -march=native (NUTS)", "stan", "native", "nuts"),
    ("Stan -march=native, stanc --O1 (NUTS)", "stan", "native+O1", "nuts"),
    ("Stan -march=native (loop)", "stan", "native", "loop"),
    ("JAX (host ISA) (loop)", "jax", "native", "loop"),
    ("JAX (SSE4.2) (loop)", "jax", "x86-64-v2", "loop"),
    ("JAX (host ISA) (NUTS)", "jax", "native", "nuts"),
)
# Up to 255 gradients a NUTS iteration, to spread what each iteration costs besides them (drawing a momentum,
# writing the draw and Stan's diagnostics, all on Stan's sampling clock) over many gradients.
MAX_DEPTH = 8
REP_SECONDS = 0.5  # the timed part of one repetition of one column
SEED = 1


# --- Stan's worker (never imports JAX) -------------------------------------------------------------------------


def stan_module(stan_file: Path, build: str):
    """httpstan's compiled module of ``stan_file``: the engine's build for an ISA (``+O1``: translated with stanc's
    optimiser), or (``baseline``) the program as pystan's server builds it unasked."""
    import httpstan.models
    import stan.common

    from stanjax.runner.engines.stan_bundled import HttpstanBackend

    if build != "baseline":
        isa, _, optimiser = build.partition("+")
        built = HttpstanBackend().compile(stan_file, isa, (f"--{optimiser}",) if optimiser else ())
        return httpstan.models.import_services_extension_module(built["model_name"])
    code = stan_file.read_text()

    async def post():
        async with stan.common.HttpstanClient() as client:
            response = await client.post("/models", json={"program_code": code})
            if response.status != 201:
                raise RuntimeError(f"{stan_file} failed to compile: {response.json()['message']}")

    asyncio.run(post())
    return httpstan.models.import_services_extension_module(httpstan.models.calculate_model_name(code))


def stan_nuts_ms(module, arguments: dict, label: str = "") -> tuple[float, float]:
    """One chain of NUTS: (ms per gradient by Stan's sampling clock, seconds that clock read)."""
    from stanjax.runner.engines.stan_bundled import _run_chains
    from stanjax.runner.engines.stan_output import _parse_elapsed, sample_table

    [output] = _run_chains(module, arguments, chains=1)
    columns, table = sample_table(output.draws, arguments["num_samples"])
    gradients = table[:, columns.index("n_leapfrog__")].sum()
    if gradients < 10 * len(table):
        print(
            f"warning: {label}: {gradients / len(table):.1f} leapfrogs an iteration: per-iteration costs dominate "
            "(a smaller --init-radius may help)",
            file=sys.stderr,
            flush=True,
        )
    seconds = _parse_elapsed(output.text)["sampling"]
    return 1000 * seconds / gradients, seconds


def rows(models: list[str], alts: list[str]) -> list[tuple[str, str, str | None]]:
    """(row label, model ID, alternative program or None): each model's own row, then each ``--alt``'s."""
    return [(m, m, None) for m in models] + [(a, *a.split("=", 1)) for a in alts]


def applies(kind: str, alt: str | None) -> bool:
    """Whether a column of this kind times this row: an alternative .stan in Stan's, a .py in JAX's."""
    return alt is None or alt.endswith(".stan" if kind == "stan" else ".py")


def loop_point(model_id: str) -> dict:
    """The loop clock's point of a model (JAX's start, constrained; ``gradient_clocks.stan_point``), for the Stan
    worker's loop columns: computed in a spawned process, since the Stan worker never loads JAX."""
    from stanjax import models as registry
    from stanjax.runner.measure.gradient_clocks import stan_point

    spec = registry.get(model_id)
    return stan_point(spec, spec.data("default", SEED), (), "default")


def stan_loop_timer(stan_file: Path, build: str, data: dict, point: dict):
    """One repetition of the loop clock: the driver of ``stan_file`` for the build's ISA (stanc's optimiser where
    "+O1"), its loop of gradients sized once to take ``REP_SECONDS``."""
    from stanjax.runner.engines import stan_loop

    isa, _, optimiser = build.partition("+")
    driver = stan_loop.build(stan_file, isa, (f"--{optimiser}",) if optimiser else ())
    repeats = stan_loop.timed(driver, data, point, 200, REP_SECONDS, 10**8, 1).repeats
    return lambda: stan_loop.timed(driver, data, point, repeats, 0.0, repeats, 1).ms_per_gradient


def stan_worker(models: list[str], programs: dict[str, str], alts: list[str], builds: list[str], init_radius: float):
    """Per (row, build, clock): a function that runs one repetition and returns ms per gradient."""
    import multiprocessing

    from stanjax import models as registry
    from stanjax.runner.core.config import RunConfig
    from stanjax.runner.engines.stan_bundled import nuts_arguments

    timers = {}
    for label, model_id, alt in rows(models, alts):
        if not applies("stan", alt):
            continue
        spec = registry.get(model_id)
        data = spec.data("default", SEED)
        stan_file = Path(alt or programs.get(model_id, spec.stan_file))
        for build_clock in builds:
            build, clock = build_clock.split(":")
            if clock == "loop":
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    point = pool.apply(loop_point, (model_id,))
                timers[label, build, clock] = stan_loop_timer(stan_file, build, data, point)
                continue
            module = stan_module(stan_file, build)
            config = RunConfig(warmup=0, draws=3, max_treedepth=MAX_DEPTH)
            arguments = {**nuts_arguments(module, data, config, SEED), "chain": 1, "init_radius": init_radius}
            try:
                _, seconds = stan_nuts_ms(module, arguments, label)  # calibrates: draws for REP_SECONDS
            except RuntimeError as err:  # shown as NaN: a build whose NUTS fails is a finding, not a stop
                print(f"{model_id} {build}: {str(err)[:200]}", file=sys.stderr, flush=True)
                timers[label, build, clock] = lambda: float("nan")
                continue
            arguments["num_samples"] = max(3, round(3 * REP_SECONDS / max(seconds, 1e-3)))
            timers[label, build, clock] = lambda module=module, arguments=arguments, label=label: stan_nuts_ms(
                module, arguments, label
            )[0]
    return timers


# --- JAX's worker ------------------------------------------------------------------------------------------------


def jax_worker(models: list[str], isa: str, alts: list[str], clocks: list[str], init_radius: float):
    """Per (row, isa, clock): a function that runs one repetition and returns ms per gradient."""
    import importlib.util

    from stanjax.runner.core.config import Placement, RunConfig
    from stanjax.runner.engines.jax_setup import initial_points, start_jax
    from stanjax.runner.measure.gradient_clocks import POINT_KEY

    jax = start_jax(Placement(isa=isa), chains=1)
    jax.config.update("jax_enable_compilation_cache", False)  # nothing to gain here; keeps the cache clean
    from stanjax import jax_models
    from stanjax import models as registry

    timers = {}
    for label, model_id, alt in rows(models, alts):
        if not applies("jax", alt):
            continue
        spec = registry.get(model_id)
        data = spec.data("default", SEED)
        model = jax_models.load(spec.jax_file)
        if alt:
            loader = importlib.util.spec_from_file_location(f"alt_{len(timers)}", alt)
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
            model = getattr(module, spec.model_name)
        if "nuts" in clocks:
            timers[label, isa, "nuts"] = jax_nuts_timer(jax, model, data, init_radius)
        if "loop" not in clocks:
            continue
        # the loop clock's point (the suite's): where the Stan loop column times its gradient too
        points, potential, _ = initial_points(jax, model, data, RunConfig(chains=1), jax.random.key(POINT_KEY))
        point = jax.tree.map(lambda x: x[0], points)
        value_and_grad = jax.value_and_grad(potential)

        def steps(z, n):  # jitted and run within this iteration: the loop's value_and_grad is the one it sees
            def body(_, carry):
                z, total = carry
                value, gradient = value_and_grad(z)  # noqa: B023
                return jax.tree.map(lambda x, g: x + 1e-300 * g, z, gradient), total + value

            return jax.lax.fori_loop(0, n, body, (z, 0.0))

        run = jax.jit(steps)
        jax.block_until_ready(run(point, 10))  # compiles (n is traced: one compile for every n)
        start = time.perf_counter()
        jax.block_until_ready(run(point, 100))
        n = max(100, round(100 * REP_SECONDS / (time.perf_counter() - start)))

        def timer(run=run, point=point, n=n):
            start = time.perf_counter()
            jax.block_until_ready(run(point, n))
            return 1000 * (time.perf_counter() - start) / n

        timers[label, isa, "loop"] = timer
    return timers


def jax_nuts_timer(jax, model, data: dict, init_radius: float):
    """One repetition of the NUTS clock: NumPyro's NUTS kernel without warmup (its step size from its initial
    heuristic, as Stan's), trees of at most ``MAX_DEPTH``, the draws one scan compiled ahead, from the same start each
    repetition, sized once to take ``REP_SECONDS``; its clock ÷ its leapfrog steps."""
    from numpyro.infer import NUTS, init_to_uniform

    kernel = NUTS(
        model,
        max_tree_depth=MAX_DEPTH,
        find_heuristic_step_size=True,
        init_strategy=init_to_uniform(radius=init_radius),
    )
    state = kernel.init(jax.random.PRNGKey(SEED), 0, None, model_args=(), model_kwargs=data)

    def compiled(n: int):
        def draws(state):
            return jax.lax.scan(lambda s, _: (kernel.sample(s, (), data),) * 2, state, None, length=n)[1].num_steps

        return jax.jit(draws).lower(state).compile()

    def ms(run) -> tuple[float, float]:
        """(ms per leapfrog step, seconds) of one run."""
        start = time.perf_counter()
        steps = jax.block_until_ready(run(state))
        seconds = time.perf_counter() - start
        return 1000 * seconds / int(np.sum(np.asarray(steps))), seconds

    probe = compiled(3)
    ms(probe)
    run = compiled(max(3, round(3 * REP_SECONDS / max(ms(probe)[1], 1e-4))))
    return lambda: ms(run)[0]


def worker(
    kind: str, build: str, core: int, models: list[str], programs: dict[str, str], alts: list[str], init_radius: float
) -> None:
    """Serve repetitions: one line in ("row build clock"), one line out (ms per gradient). A Stan worker's ``build``
    is its BUILD:CLOCK pairs, comma-separated; a JAX worker's its ISA, a colon, its clocks comma-separated."""
    os.sched_setaffinity(0, {core})
    if kind == "stan":
        timers = stan_worker(models, programs, alts, build.split(","), init_radius)
    else:
        isa, clocks = build.split(":")
        timers = jax_worker(models, isa, alts, clocks.split(","), init_radius)
    print("ready", flush=True)
    for line in sys.stdin:
        model_id, asked, clock = line.split()
        print(json.dumps(timers[model_id, asked, clock]()), flush=True)


# --- the conductor -----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--reps", type=int, default=5, help="interleaved repetitions (default 5)")
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)), help="the one core used")
    parser.add_argument(
        "--program",
        action="append",
        default=[],
        metavar="ID=PATH",
        help="time this Stan program for model ID in place of its stan/ one",
    )
    parser.add_argument(
        "--alt",
        action="append",
        default=[],
        metavar="ID=PATH",
        help="also time this program (.stan) or NumPyro model (.py) for model ID, interleaved",
    )
    parser.add_argument(
        "--columns",
        nargs="+",
        metavar="KIND:BUILD:CLOCK",
        help="only these columns, e.g. stan:native:loop jax:native:loop (default: all)",
    )
    parser.add_argument("--init-radius", type=float, default=2.0, help="Stan's init radius (default 2, Stan's)")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "BUILD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    programs = dict(item.split("=", 1) for item in args.program)
    if args.worker:
        worker(*args.worker, args.core, args.models, programs, args.alt, args.init_radius)
        return 0

    columns = [c for c in COLUMNS if args.columns is None or ":".join(c[1:]) in args.columns]
    table_rows = rows(args.models, args.alt)
    common = [
        "--core",
        str(args.core),
        "--models",
        *args.models,
        *(f"--program={p}" for p in args.program),
        *(f"--alt={a}" for a in args.alt),
        f"--init-radius={args.init_radius}",
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    workers = {}
    # one Stan worker for every Stan column; a JAX worker per ISA (XLA reads its ISA flag once), for its clocks
    stan_builds = ",".join(f"{build}:{clock}" for _, kind, build, clock in columns if kind == "stan")
    isas = {build: [c for _, k, b, c in columns if k == "jax" and b == build] for _, kind, build, _ in columns}
    jax_workers = {build: f"{build}:{','.join(clocks)}" for build, clocks in isas.items() if clocks}
    wanted = ([("stan", stan_builds)] if stan_builds else []) + [("jax", b) for b in jax_workers.values()]
    for kind, build in wanted:
        workers[kind, build] = subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, build, *common],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        if workers[kind, build].stdout.readline().strip() != "ready":  # one at a time: compiles share no core
            raise RuntimeError(f"the {kind} {build} worker failed to start")
    times: dict[tuple[str, str], list[float]] = {}
    start = time.perf_counter()
    for rep in range(args.reps):
        # rows, like columns, in an order rotated each repetition (an old and a new program alternate)
        for label, _, alt in table_rows[rep % len(table_rows) :] + table_rows[: rep % len(table_rows)]:
            for heading, kind, build, clock in columns[rep % len(columns) :] + columns[: rep % len(columns)]:
                if not applies(kind, alt):
                    continue
                process = workers[kind, stan_builds if kind == "stan" else jax_workers[build]]
                process.stdin.write(f"{label} {build} {clock}\n")
                process.stdin.flush()
                times.setdefault((label, heading), []).append(json.loads(process.stdout.readline()))
    for process in workers.values():
        process.stdin.close()
        process.wait()

    print(
        f"Milliseconds per gradient, median of {args.reps} interleaved repetitions (min-max), float64, default "
        f"sizes, one core (CPU {args.core}); {time.perf_counter() - start:.0f} s of repetitions. (loop): in a compiled "
        "loop; (NUTS): inside the sampler, its clock ÷ its leapfrog steps: set a side beside the other on one clock.\n"
    )
    print("| model | " + " | ".join(heading for heading, *_ in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for label, model_id, alt in table_rows:
        cells = []
        for heading, *_ in columns:
            found = times.get((label, heading))
            cells.append(f"{statistics.median(found):.4g} ({min(found):.4g}-{max(found):.4g})" if found else "-")
        shown = (
            f"{model_id} ({alt})" if alt else model_id + (f" ({programs[model_id]})" if model_id in programs else "")
        )
        print(f"| {shown} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
