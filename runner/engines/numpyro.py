"""The NumPyro engine: NumPyro's NUTS kernel where the placement says (CPU: float64, one host device per chain; GPU:
float32 unless --x64, chains vectorised).

Timed directly, as a JAX user benchmarks: warmup and sampling are each one function, lowered and compiled ahead of
time (``compile_s``), then run to ``block_until_ready``; their clocks hold no compilation and nothing is subtracted.
``MCMC.warmup``/``MCMC.run`` cannot be timed so: each call traces its loop anew (a fresh closure), and from the
outside only jax.monitoring's compile spans could be taken away, a small difference of two large numbers on small
models. The loop here is the one ``MCMC`` runs with ``jit_model_args=True`` (``kernel.init``, then
``kernel.sample`` ``num_warmup`` times, then ``num_samples`` times, each draw constrained by the kernel's
``postprocess_fn``); the test suite holds it to the same draws as ``MCMC``.

The data's arrays are arguments of the compiled functions (``jit_model_args``), never constants folded into the
program; integer scalars (sizes: plate lengths, shapes) stay Python values bound to the model, as they must.
Warmup statistics stay on the device: only the count of gradients is carried out of it.
"""

from __future__ import annotations

import functools
import time
from importlib import metadata

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec
from stanjax.runner.core import run_progress
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.engines.jax_setup import CompileClock, device_info, initial_points, split_data, start_jax


class NumPyroEngine:
    name = "numpyro"

    def __init__(self, front_end: str = "numpyro"):
        self.front_end = front_end

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        """Nothing to build before the data: both phases are compiled inside ``sample``, and timed."""
        return {"model": jax_models.load(spec.jax_file)}

    def sample(
        self, handle, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult:
        jax = start_jax(placement, config.chains)
        from numpyro.infer import NUTS, init_to_uniform

        sizes, arrays = split_data(data)
        model = functools.partial(handle["model"], **sizes)
        kernel = NUTS(
            model,
            target_accept_prob=config.target_accept,
            max_tree_depth=config.max_treedepth,
            init_strategy=init_to_uniform(radius=config.init_radius),
        )
        traces = {"warmup": 0, "sampling": 0}

        def warmup_one(chain, arrays):
            traces["warmup"] += 1
            key, init = chain
            state = kernel.init(key, config.warmup, init, model_args=(), model_kwargs=arrays)

            def step(_, carry):
                state, gradients = carry
                state = kernel.sample(state, (), arrays)
                return state, gradients + state.num_steps

            return jax.lax.fori_loop(0, config.warmup, step, (state, jax.numpy.zeros_like(state.num_steps)))

        def sample_one(state, arrays):
            traces["sampling"] += 1
            constrain = kernel.postprocess_fn((), arrays)

            def step(state, _):
                state = kernel.sample(state, (), arrays)
                return state, (constrain(state.z), state.num_steps, state.diverging)

            return jax.lax.scan(step, state, None, length=config.draws)[1]

        warmup_all, sample_all = _over_chains(jax, placement.chain_method, warmup_one, sample_one)

        clock = CompileClock()  # here only for its persistent-cache counts
        start = time.perf_counter()
        rng_key = jax.random.PRNGKey(seed)
        # As MCMC: one key a chain, split from the seed's; each chain draws its own start inside warmup unless
        # many short chains start in superchains (nested R-hat), whose shared points are drawn here, in the
        # compile span (tracing the model to draw them is most of it).
        keys = jax.random.split(rng_key, config.chains) if config.chains > 1 else rng_key[None]
        inits = (
            initial_points(jax, handle["model"], data, config, jax.random.fold_in(rng_key, 1))[0]
            if config.superchains
            else None
        )
        warmup_compiled = warmup_all.lower((keys, inits), arrays).compile()
        compile_s = time.perf_counter() - start
        # Each phase is one compiled call: what is reported is the phase it is in (between the clocks).
        run_progress.report(f"NumPyro: warmup, {config.warmup:,} iterations a chain in one compiled call")
        start = time.perf_counter()
        states, warmup_gradients = jax.block_until_ready(warmup_compiled((keys, inits), arrays))
        warmup_s = time.perf_counter() - start

        run_progress.report("NumPyro: compiling the sampling")
        start = time.perf_counter()
        sampling_compiled = sample_all.lower(states, arrays).compile()
        compile_s += time.perf_counter() - start
        run_progress.report(f"NumPyro: sampling, {config.draws:,} draws a chain in one compiled call")
        start = time.perf_counter()
        samples, n_steps, diverging = jax.block_until_ready(sampling_compiled(states, arrays))
        sampling_s = time.perf_counter() - start

        start = time.perf_counter()  # the host copy: part of what a user waits for, not of the sampler
        draws = {name: np.asarray(value, dtype=np.float64) for name, value in samples.items()}
        n_leapfrog, divergent = np.asarray(n_steps, np.int64), np.asarray(diverging, bool)
        host_s = time.perf_counter() - start

        timings = Timings(
            compile_s=compile_s,
            warmup_s=warmup_s,
            sampling_s=sampling_s,
            user_s=warmup_s + sampling_s + host_s,
            source="sampler: NumPyro's NUTS kernel in ahead-of-time compiled warmup and sampling functions (data "
            "as arguments), each timed to block_until_ready, nothing subtracted; user: the same plus the copy of "
            "draws and statistics to host arrays",
            compile_cached=clock.all_cached,
            detail={"traces": dict(traces), "host_copy_s": host_s},
        )
        stats = SamplerStats(
            n_leapfrog=n_leapfrog,
            divergent=divergent,
            warmup_gradients=int(np.sum(warmup_gradients)),
            step_size=[float(s) for s in np.atleast_1d(np.asarray(states.adapt_state.step_size))],
        )
        info = {
            "numpyro": metadata.version("numpyro"),
            "jaxlib": metadata.version("jaxlib"),
            "superchains": config.superchains,
            "traces": dict(traces),
            "data_as_arguments": sorted(arrays),
            "data_bound": sorted(sizes),
            **device_info(jax, placement, config.chains),
        }
        return SampleResult(draws, timings, stats, info)


def _over_chains(jax, chain_method: str, warmup_one, sample_one):
    """Both phases over the chains as MCMC's chain methods run them: ``parallel`` one device a chain (pmap),
    ``vectorized`` one vmapped batch, ``sequential`` one chain after another (lax.map); each a jitted function
    ready to ``lower``. The first argument holds the chains' values (warmup: their keys and starts, which may be
    None), the second the data, broadcast to every chain."""
    if chain_method == "parallel":
        return jax.pmap(warmup_one, in_axes=(0, None)), jax.pmap(sample_one, in_axes=(0, None))
    if chain_method == "vectorized":
        return jax.jit(jax.vmap(warmup_one, in_axes=(0, None))), jax.jit(jax.vmap(sample_one, in_axes=(0, None)))
    if chain_method == "sequential":

        def one_after_another(phase):
            return jax.jit(lambda chains, arrays: jax.lax.map(lambda chain: phase(chain, arrays), chains))

        return one_after_another(warmup_one), one_after_another(sample_one)
    raise ValueError(f"unknown chain method {chain_method!r}")
