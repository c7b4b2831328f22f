"""nutpie's NUTS on both sides' densities, run as its users run it: nutpie's own adaptation and defaults (a diagonal
mass matrix from the draws' and the gradients' variances, the step size by dual averaging, jittered), with the run's
chains, warmup (nutpie's ``tune``), draws, target acceptance, tree depth and seed, its chains threads of one process,
as many at once as the worker has cores.

- ``NutpieStanEngine`` (nutpie_stan): the Stan program built with BridgeStan
  (:mod:`stanjax.runner.engines.bridgestan_build`), the data handed over as Stan's JSON.
- ``NutpieJaxEngine`` (nutpie_jax): the NumPyro model's potential with its gradient, and its constraining, each one
  function jitted and compiled ahead of time with the data's arrays as arguments (never constants), handed to nutpie
  through ``nutpie.compiled_pyfunc.from_pyfunc`` as nutpie's own JAX backend hands it a PyMC model; nutpie calls the
  first at every leapfrog step and the second at every draw, from its chains' threads.

Clocks: ``user_s``, data handed over (the Stan model constructed on its JSON; the arrays put on the device) to the
draws in NumPy arrays (nutpie's Arrow trace read into xarray, then arrays); ``sampler_s``, nutpie's sample call until
its progress reports every chain finished (nutpie calls the progress callback once more when they are). nutpie has no
clock for warmup and sampling apart, so the sampler's seconds are split in the ratio of the two phases' leapfrog
steps, summed over chains. Compilation (BridgeStan's build; the model's tracing and XLA's compile) precedes both.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec, UsageError
from stanjax.runner.core import engine_registry, run_progress
from stanjax.runner.core.config import Placement, RunConfig, stanc_options
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.engines.bridgestan_build import BridgeStanBuild
from stanjax.runner.engines.stan import program as stan_program

# nutpie calls the progress callback as the chains start, every PROGRESS_MS and once every chain is done: each call
# is a report in the run's log (run_progress), the last one's clock is read; a long period keeps the callback off
# the chains' GIL.
PROGRESS_MS = 60_000
ADAPTATION = (
    "nutpie's default ('diag'): a diagonal mass matrix from the draws' and the gradients' variances, the step size "
    "by dual averaging to target_accept, jittered each draw"
)


@dataclass(frozen=True)
class Sampled:
    """One nutpie sample call: its trace (an xarray DataTree), the sampler's seconds, each chain's own (nutpie's
    progress clock) and the chains it ran at once."""

    trace: Any
    sampler_s: float
    chain_s: list[float]
    cores: int


@contextlib.contextmanager
def one_line_errors():
    """nutpie's errors, in one line: its Rust side's give their cause, then Rust's backtrace, which would fill the
    error record's last lines."""
    try:
        yield
    except RuntimeError as err:
        cause = " ".join(line.strip() for line in str(err).split("Stack backtrace:")[0].splitlines() if line.strip())
        raise RuntimeError(f"nutpie: {cause}") from None


def progress_text(chains) -> str:
    """What nutpie's progress callback says of its chains: the slowest one's draws (tuning included) and its
    latest tree, and every chain's divergences."""
    slowest = min(chains, key=lambda chain: chain.finished_draws)
    divergences = sum(chain.divergences for chain in chains)
    which = f", the slowest of {len(chains)} chains; its" if len(chains) > 1 else "; its"
    return (
        f"nutpie: draw {slowest.finished_draws:,} of {slowest.total_draws:,} (tuning first){which} last tree "
        f"{slowest.latest_num_steps} leapfrog steps; {divergences} divergent"
    )


def run(model, config: RunConfig, seed: int) -> Sampled:
    """nutpie's sample call on a compiled nutpie ``model``, timed to the progress report of its last chain."""
    import nutpie

    cores = min(config.chains, len(os.sched_getaffinity(0)))  # the worker's cores: it is pinned to the run's
    finished: list[tuple[float, list[float]]] = []
    reached: list[str] = []  # each chain's draws at the last report

    def progress(chains) -> None:
        reached[:] = [f"{chain.finished_draws} of {chain.total_draws}" for chain in chains]
        run_progress.report(progress_text(chains))
        if all(chain.finished_draws == chain.total_draws for chain in chains):
            finished.append((time.perf_counter(), [chain.runtime_ms / 1e3 for chain in chains]))

    start = time.perf_counter()
    with one_line_errors():
        trace = nutpie.sample(
            model,
            draws=config.draws,
            tune=config.warmup,
            chains=config.chains,
            cores=cores,
            seed=seed,
            target_accept=config.target_accept,
            maxdepth=config.max_treedepth,
            progress_bar=False,
            progress_callback=progress,
            progress_rate=PROGRESS_MS,
        )
    if not finished:
        raise RuntimeError(f"nutpie's progress never reported every chain finished (draws: {', '.join(reached)})")
    end, chain_s = finished[0]
    return Sampled(trace, end - start, chain_s, cores)


def result(sampled: Sampled, start: float, compile_s: float, cached: bool, source: str, info: dict) -> SampleResult:
    """The run's result from nutpie's trace: its constrained draws in arrays (``user_s`` ends here), statistics and
    timings (``start``: when the data were handed over)."""
    trace = sampled.trace
    draws = {name: np.asarray(values, np.float64) for name, values in trace["posterior"].data_vars.items()}
    stats = trace["sample_stats"]
    n_leapfrog = np.asarray(stats["n_steps"], np.int64)
    divergent = np.asarray(stats["diverging"], bool)
    user_s = time.perf_counter() - start
    warmup_gradients = int(np.sum(trace["warmup_sample_stats"]["n_steps"]))
    warmup_share = warmup_gradients / (warmup_gradients + int(n_leapfrog.sum()))
    timings = Timings(
        compile_s=compile_s,
        warmup_s=sampled.sampler_s * warmup_share,
        sampling_s=sampled.sampler_s * (1 - warmup_share),
        user_s=user_s,
        source=f"sampler: nutpie's sample call until its progress reported every chain finished, split in the ratio "
        f"of warmup's to sampling's leapfrog steps summed over chains (nutpie has no clock for each phase); {source}",
        compile_cached=cached,
        detail={"chain_s": sampled.chain_s},
    )
    sampler_stats = SamplerStats(
        n_leapfrog=n_leapfrog,
        divergent=divergent,
        warmup_gradients=warmup_gradients,
        step_size=[float(s) for s in np.asarray(stats["step_size_bar"])[:, -1]],  # adapted, before the jitter
    )
    settings = json.loads(stats.attrs["inference_library_settings"])
    info = {
        "nutpie": metadata.version("nutpie"),
        "adaptation": ADAPTATION,
        "nutpie_settings": settings,
        "chains_at_once": sampled.cores,
        "cpu_threads": len(os.sched_getaffinity(0)),
        "dtype": "float64",
        **info,
    }
    return SampleResult(draws, timings, sampler_stats, info)


class NutpieStanEngine:
    """nutpie on the Stan program, through the BridgeStan build ``find_bridgestan`` finds."""

    name = "nutpie_stan"

    def __init__(self, front_end: str = "bridgestan"):
        root = engine_registry.find_bridgestan()
        if root is None:
            raise UsageError(f"nutpie_stan: {engine_registry.NO_BRIDGESTAN}")
        self.build = BridgeStanBuild(Path(root))

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        """The program built (or found in the cache), loaded as nutpie loads a BridgeStan library: the two steps
        ``nutpie.compile_stan_model`` takes on a hit of its own cache, which keys on the code and bridgestan's
        Python version alone (not the Stan library, flags or ISA) and lives outside stanjax's."""
        from nutpie import _lib
        from nutpie.compile_stan import CompiledStanModel

        program = self.build.compile(stan_program(spec, placement), placement.isa, stanc_options(placement.program))
        library = _lib.StanLibrary(str(program.library))
        model = CompiledStanModel(code=program.code, library=library, dims={}, _coords={}, model=None, data=None)
        return {"model": model, "program": program}

    def sample(
        self, handle, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult:
        if placement.device != "cpu":
            raise ValueError("nutpie_stan runs on the CPU only")
        program = handle["program"]
        start = time.perf_counter()
        with one_line_errors():  # Stan's JSON (stanio), the BridgeStan model built on it
            model = handle["model"].with_data(seed=seed, **data)
        sampled = run(model, config, seed)
        source = "user: the model constructed on the data's JSON, the sample call, the draws to arrays"
        info = {"stan_interface": "nutpie (BridgeStan)", "bridgestan_python": metadata.version("bridgestan")}
        info |= {**program.info, "init": "nutpie's own for a Stan program"}
        return result(sampled, start, program.compile_s, program.cached, source, info)


class NutpieJaxEngine:
    """nutpie on the NumPyro model's potential (``initialize_model``), its gradient by JAX."""

    name = "nutpie_jax"

    def __init__(self, front_end: str = "jax"):
        self.front_end = front_end

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        """Nothing to build before the data: both functions are compiled inside ``sample``, and timed."""
        return {"model": jax_models.load(spec.jax_file)}

    def sample(
        self, handle, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult:
        from stanjax.runner.engines.jax_setup import CompileClock, device_info, model_functions, start_jax

        if placement.device != "cpu":
            raise ValueError("nutpie_jax runs on the CPU only")
        jax = start_jax(placement, 1)  # nutpie's chains are threads that share one XLA device
        from jax.flatten_util import ravel_pytree
        from nutpie.compiled_pyfunc import from_pyfunc

        clock = CompileClock()  # here only for its persistent-cache counts
        start = time.perf_counter()
        points, potential_of, constrain_of, arrays = model_functions(
            jax, handle["model"], data, config, jax.random.PRNGKey(seed)
        )
        flat, unravel = ravel_pytree(jax.tree.map(lambda chains: chains[0], points))

        def logp_and_gradient(x, arrays):
            return jax.value_and_grad(lambda x: -potential_of(arrays)(unravel(x)))(x)

        def constrain(x, arrays):
            return constrain_of(arrays)(unravel(x))

        logp_compiled = jax.jit(logp_and_gradient).lower(flat, arrays).compile()
        constrain_compiled = jax.jit(constrain).lower(flat, arrays).compile()
        sites = jax.eval_shape(constrain, flat, arrays)
        compile_s = time.perf_counter() - start

        def make_logp():
            def logp(x, /, **arrays):  # positional only: a data array may be named x (the GPs')
                value, gradient = logp_compiled(x, arrays)
                return float(value), np.asarray(gradient, np.float64)

            return logp

        def make_expand(seed1, seed2, chain):
            def expand(x, /, **arrays):
                return {name: np.asarray(value, np.float64) for name, value in constrain_compiled(x, arrays).items()}

            return expand

        def initial_point(seed):  # uniform within the run's radius on the unconstrained scale, as every engine
            return np.random.default_rng(seed).uniform(-config.init_radius, config.init_radius, flat.size)

        start = time.perf_counter()
        model = from_pyfunc(
            ndim=flat.size,
            make_logp_fn=make_logp,
            make_expand_fn=make_expand,
            expanded_dtypes=[np.dtype(np.float64)] * len(sites),
            expanded_shapes=[site.shape for site in sites.values()],
            expanded_names=list(sites),
            shared_data=jax.device_put(arrays),  # the data on the device once, then an argument of every call
            make_initial_point_fn=initial_point,
        )
        sampled = run(model, config, seed)
        source = (
            "user: the data put on the device, the sample call, the draws to arrays; the potential's gradient and the "
            "constraining each an XLA function compiled ahead of time (compile_s), called with the data as arguments"
        )
        info = {
            "numpyro": metadata.version("numpyro"),
            "jaxlib": metadata.version("jaxlib"),
            "init": f"uniform(-{config.init_radius:g}, {config.init_radius:g}) on the unconstrained scale",
            "data_as_arguments": sorted(arrays),
            "data_bound": sorted(set(data) - set(arrays)),
            **device_info(jax, placement, 1),
        }
        return result(sampled, start, compile_s, clock.all_cached, source, info)
