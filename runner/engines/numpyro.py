"""The NumPyro engine: NUTS where the placement says (CPU: float64, one host device per chain; GPU: float32
unless --x64, chains vectorised).

NumPyro compiles inside ``MCMC.warmup`` and ``MCMC.run``. jax.monitoring reports the time spans of tracing,
lowering and XLA compilation; their union is ``compile_s`` and is taken out of the warmup and sampling clocks.
Timers stop only after ``block_until_ready``.
"""

from __future__ import annotations

import time
from importlib import metadata

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec
from stanjax.runner.config import Placement, RunConfig
from stanjax.runner.engines import SampleResult, SamplerStats, Timings
from stanjax.runner.engines.jax_setup import CompileClock, device_info, initial_points, start_jax


class NumPyroEngine:
    name = "numpyro"

    def __init__(self, front_end: str = "numpyro"):
        self.front_end = front_end

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        """Nothing to build ahead of time: MCMC compiles on first call, timed inside ``sample``."""
        return {"model": jax_models.load(spec.model_name)}

    def sample(
        self, handle, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult:
        jax = start_jax(placement, config.chains)
        from numpyro.infer import MCMC, NUTS, init_to_uniform

        clock = CompileClock()
        kernel = NUTS(
            handle["model"],
            target_accept_prob=config.target_accept,
            max_tree_depth=config.max_treedepth,
            init_strategy=init_to_uniform(radius=config.init_radius),
        )
        mcmc = MCMC(
            kernel,
            num_warmup=config.warmup,
            num_samples=config.draws,
            num_chains=config.chains,
            chain_method=placement.chain_method,
            progress_bar=False,
        )

        start = time.perf_counter()  # the clock's compile spans from here on (the key's own included) are inside
        rng_key = jax.random.PRNGKey(seed)
        # Many short chains start in superchains (nested R-hat); otherwise NumPyro draws each chain's start itself
        # inside warmup. Either way the initialisation is part of the warmup span.
        init_params = (
            initial_points(jax, handle["model"], data, config, jax.random.fold_in(rng_key, 1))[0]
            if config.superchains
            else None
        )
        mcmc.warmup(rng_key, extra_fields=("num_steps",), collect_warmup=True, init_params=init_params, **data)
        jax.block_until_ready(mcmc.post_warmup_state)
        warmup_wall, warmup_compile = time.perf_counter() - start, clock.seconds()
        warmup_gradients = int(np.sum(mcmc.get_extra_fields()["num_steps"]))

        clock.reset()
        start = time.perf_counter()
        mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps", "diverging"), **data)
        samples = jax.block_until_ready(mcmc.get_samples(group_by_chain=True))
        extra = jax.block_until_ready(mcmc.get_extra_fields(group_by_chain=True))
        sampling_wall, sampling_compile = time.perf_counter() - start, clock.seconds()

        start = time.perf_counter()  # the host copy: part of what a user waits for, not of the sampler
        draws = {name: np.asarray(value, dtype=np.float64) for name, value in samples.items()}
        n_leapfrog, divergent = np.asarray(extra["num_steps"], np.int64), np.asarray(extra["diverging"], bool)
        host_s = time.perf_counter() - start

        compile_s = warmup_compile + sampling_compile
        timings = Timings(
            compile_s=compile_s,
            warmup_s=warmup_wall - warmup_compile,
            sampling_s=sampling_wall - sampling_compile,
            user_s=warmup_wall + sampling_wall + host_s - compile_s,
            source="sampler: wall of MCMC.warmup and MCMC.run to block_until_ready, less jax.monitoring compile "
            "spans; user: the same plus the copy of draws and statistics to host arrays",
            compile_cached=clock.all_cached,
            detail={"warmup_wall_s": warmup_wall, "sampling_wall_s": sampling_wall, "host_copy_s": host_s},
        )
        stats = SamplerStats(
            n_leapfrog=n_leapfrog,
            divergent=divergent,
            warmup_gradients=warmup_gradients,
            step_size=[float(s) for s in np.atleast_1d(mcmc.last_state.adapt_state.step_size)],
        )
        info = {
            "numpyro": metadata.version("numpyro"),
            "jaxlib": metadata.version("jaxlib"),
            "superchains": config.superchains,
            **device_info(jax, placement, config.chains),
        }
        return SampleResult(draws, timings, stats, info)
