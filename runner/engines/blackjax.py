"""The BlackJAX engines, on the same NumPyro models (log density from ``numpyro.infer.util.initialize_model``).

- ``nuts``: NUTS with Stan-style window adaptation (step size + diagonal mass matrix), each chain adapted on its
  own, chains vectorised with ``vmap``.
- ``chees``: jittered dynamic HMC whose step size and trajectory length ChEES tunes across the whole chain batch
  (Hoffman, Radul & Sountsov 2021): the many-chain, GPU-friendly adaptive HMC.

Warmup and sampling are each one jitted function, compiled ahead of time (``lower().compile()``), so
``compile_s`` is measured directly and the run clocks hold no compilation. The data's arrays are their arguments,
not constants folded into the program. ``info["traces"]`` counts how often
each phase was traced: 1 each, or a silent recompilation happened.
"""

from __future__ import annotations

import time
from importlib import metadata

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.engines.jax_setup import CompileClock, device_info, model_functions, start_jax

CHEES_TARGET_ACCEPT = 0.651  # ChEES's default: the optimal acceptance rate for HMC
CHEES_LEARNING_RATE = 0.025  # Adam on log step size and log trajectory length, as in BlackJAX's examples
CHEES_INITIAL_STEP_SIZE = 0.1


class BlackJAXEngine:
    def __init__(self, algorithm: str):
        if algorithm not in ("nuts", "chees"):
            raise ValueError(f"unknown BlackJAX algorithm {algorithm!r}")
        self.algorithm = algorithm
        self.name = f"blackjax_{algorithm}"

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        """Nothing to build ahead of the data: the phases are compiled inside ``sample``, and timed."""
        return {"model": jax_models.load(spec.jax_file)}

    def sample(
        self,
        handle,
        data: dict,
        config: RunConfig,
        seed: int,
        placement: Placement = Placement("cpu", "float64", "vectorized"),
    ) -> SampleResult:
        if placement.chain_method != "vectorized":
            raise ValueError("BlackJAX engines run the chains as one vectorised batch")
        jax = start_jax(placement, config.chains)
        key_init, key_warmup, key_sample = jax.random.split(jax.random.PRNGKey(seed), 3)
        init_z, potential_of, constrain_of, arrays = model_functions(jax, handle["model"], data, config, key_init)
        traces = {"warmup": 0, "sampling": 0}

        def logdensity_of(arrays):
            potential_fn = potential_of(arrays)
            return lambda position: -potential_fn(position)

        warmup, sampling = (_nuts_phases if self.algorithm == "nuts" else _chees_phases)(
            jax, logdensity_of, config, traces
        )

        clock = CompileClock()  # here only for its persistent-cache counts
        start = time.perf_counter()
        warmup_compiled = jax.jit(warmup).lower(key_warmup, init_z, arrays).compile()
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        states, parameters, warmup_steps = jax.block_until_ready(warmup_compiled(key_warmup, init_z, arrays))
        warmup_s = time.perf_counter() - start

        start = time.perf_counter()
        sampling_compiled = jax.jit(sampling).lower(key_sample, states, parameters, arrays).compile()
        compile_s += time.perf_counter() - start
        start = time.perf_counter()
        positions, n_steps, divergent = jax.block_until_ready(sampling_compiled(key_sample, states, parameters, arrays))
        sampling_s = time.perf_counter() - start

        start = time.perf_counter()  # constrained draws in host arrays: what a user waits for beyond the sampler
        constrained = jax.vmap(jax.vmap(constrain_of(arrays)))(positions)  # (chains, draws, ...)
        draws = {name: np.asarray(value, dtype=np.float64) for name, value in constrained.items()}
        host_s = time.perf_counter() - start
        timings = Timings(
            compile_s=compile_s,
            warmup_s=warmup_s,
            sampling_s=sampling_s,
            user_s=warmup_s + sampling_s + host_s,
            source="sampler: ahead-of-time compiled warmup and sampling functions, each timed to "
            "block_until_ready; user: the same plus constraining the draws and copying them to host arrays",
            compile_cached=clock.all_cached,
            detail={"traces": dict(traces), "host_copy_s": host_s},
        )
        stats = SamplerStats(
            n_leapfrog=np.asarray(n_steps, dtype=np.int64),
            divergent=np.asarray(divergent, dtype=bool),
            warmup_gradients=int(np.sum(warmup_steps)),
            step_size=[float(s) for s in np.broadcast_to(np.asarray(parameters["step_size"]), (config.chains,))],
        )
        info = {
            "blackjax": metadata.version("blackjax"),
            "jaxlib": metadata.version("jaxlib"),
            "algorithm": self.algorithm,
            "traces": dict(traces),
            "superchains": config.superchains,
            "data_as_arguments": sorted(arrays),
            **device_info(jax, placement, config.chains),
        }
        return SampleResult(draws, timings, stats, info)


def nuts(front_end: str = "blackjax") -> BlackJAXEngine:
    return BlackJAXEngine("nuts")


def chees(front_end: str = "blackjax") -> BlackJAXEngine:
    return BlackJAXEngine("chees")


def _nuts_phases(jax, logdensity_of, config: RunConfig, traces: dict):
    """Window-adapted NUTS, one adaptation per chain; both phases vmapped over chains, the data broadcast."""
    import blackjax

    def adapt_one(key, position, logdensity):
        adaptation = blackjax.window_adaptation(
            blackjax.nuts,
            logdensity,
            target_acceptance_rate=config.target_accept,
            max_num_doublings=config.max_treedepth,
        )
        (state, parameters), info = adaptation.run(key, position, num_steps=config.warmup)
        tuned = {name: parameters[name] for name in ("step_size", "inverse_mass_matrix")}
        return state, tuned, info.info.num_integration_steps

    def warmup(key, positions, arrays):
        traces["warmup"] += 1
        logdensity = logdensity_of(arrays)
        return jax.vmap(lambda k, p: adapt_one(k, p, logdensity))(jax.random.split(key, config.chains), positions)

    def sample_one(key, state, parameters, logdensity):
        kernel = blackjax.nuts(logdensity, max_num_doublings=config.max_treedepth, **parameters)

        def step(state, step_key):
            state, info = kernel.step(step_key, state)
            return state, (state.position, info.num_integration_steps, info.is_divergent)

        return jax.lax.scan(step, state, jax.random.split(key, config.draws))[1]

    def sampling(key, states, parameters, arrays):
        traces["sampling"] += 1
        logdensity = logdensity_of(arrays)
        return jax.vmap(lambda k, s, p: sample_one(k, s, p, logdensity))(
            jax.random.split(key, config.chains), states, parameters
        )

    return warmup, sampling


def _chees_phases(jax, logdensity_of, config: RunConfig, traces: dict):
    """ChEES-tuned jittered HMC: one adaptation across the chain batch, then all chains share its parameters."""
    import blackjax
    import optax

    # ChEES hands back its jitter schedule as Python functions of constants: they cannot leave a jitted
    # function, so warmup returns the arrays and keeps the functions here for the sampling phase.
    schedule = {}

    def warmup(key, positions, arrays):
        traces["warmup"] += 1
        adaptation = blackjax.chees_adaptation(
            logdensity_of(arrays), config.chains, target_acceptance_rate=CHEES_TARGET_ACCEPT
        )
        (states, parameters), info = adaptation.run(
            key,
            positions,
            CHEES_INITIAL_STEP_SIZE,
            optax.adam(CHEES_LEARNING_RATE),
            config.warmup,
            max_sampling_steps=config.draws,
        )
        schedule.update({name: value for name, value in parameters.items() if callable(value)})
        arrays = {name: value for name, value in parameters.items() if not callable(value)}
        return states, arrays, info.info.num_integration_steps

    def sampling(key, states, parameters, arrays):
        traces["sampling"] += 1
        kernel = blackjax.dynamic_hmc(logdensity_of(arrays), **parameters, **schedule)

        def step(states, step_key):
            states, info = jax.vmap(kernel.step)(jax.random.split(step_key, config.chains), states)
            return states, (states.position, info.num_integration_steps, info.is_divergent)

        _, (positions, n_steps, divergent) = jax.lax.scan(step, states, jax.random.split(key, config.draws))

        def swap(x):  # (draws, chains, ...) -> (chains, draws, ...)
            return jax.numpy.swapaxes(x, 0, 1)

        return jax.tree.map(swap, positions), swap(n_steps), swap(divergent)

    return warmup, sampling
