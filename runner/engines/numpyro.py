"""The NumPyro engine: NUTS on CPU, float64, one host device per chain (``chain_method="parallel"``).

NumPyro compiles inside ``MCMC.warmup`` and ``MCMC.run``. jax.monitoring reports the time spans of tracing,
lowering and XLA compilation; their union is ``compile_s`` and is taken out of the warmup and sampling clocks.
Timers stop only after ``block_until_ready``.
"""

from __future__ import annotations

import time
from importlib import metadata

import numpy as np

import jax_models
from models import ModelSpec
from runner.config import RunConfig
from runner.engines import SampleResult, SamplerStats, Timings
from runner.paths import cache_dir

COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class CompileClock:
    """Collects jax.monitoring time spans of compilation; ``seconds()`` is the length of their union.

    Also counts persistent-cache requests and hits: ``all_cached`` is true when every XLA compilation was a hit.
    """

    def __init__(self):
        import jax.monitoring

        self.spans: list[tuple[float, float]] = []
        self.cache_requests = self.cache_hits = 0
        jax.monitoring.register_event_time_span_listener(self._record_span)
        jax.monitoring.register_event_listener(self._record_event)

    def _record_span(self, event: str, start: float, end: float, **_) -> None:
        if event in COMPILE_EVENTS:
            self.spans.append((start, end))

    def _record_event(self, event: str, **_) -> None:
        if event == "/jax/compilation_cache/compile_requests_use_cache":
            self.cache_requests += 1
        elif event == "/jax/compilation_cache/cache_hits":
            self.cache_hits += 1

    @property
    def all_cached(self) -> bool:
        return 0 < self.cache_requests == self.cache_hits

    def reset(self) -> None:
        self.spans.clear()

    def seconds(self) -> float:
        total, covered_to = 0.0, float("-inf")
        for start, end in sorted(self.spans):
            if end > covered_to:
                total += end - max(start, covered_to)
                covered_to = end
        return total


class NumPyroEngine:
    name = "numpyro"

    def compile(self, spec: ModelSpec):
        """Nothing to build ahead of time: MCMC compiles on first call, timed inside ``sample``."""
        return {"model": jax_models.load(spec.model_name)}

    def sample(self, handle, data: dict, config: RunConfig, seed: int) -> SampleResult:
        import numpyro

        numpyro.set_host_device_count(config.chains)  # before JAX starts its CPU backend
        numpyro.enable_x64()
        import jax
        from numpyro.infer import MCMC, NUTS

        jax.config.update("jax_compilation_cache_dir", str(cache_dir() / "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        if jax.local_device_count() < config.chains:
            raise RuntimeError(f"JAX sees {jax.local_device_count()} CPU devices, {config.chains} chains need one each")
        clock = CompileClock()
        kernel = NUTS(handle["model"], target_accept_prob=config.target_accept, max_tree_depth=config.max_treedepth)
        mcmc = MCMC(kernel, num_warmup=config.warmup, num_samples=config.draws, num_chains=config.chains,
                    chain_method="parallel", progress_bar=False)

        start = time.perf_counter()
        mcmc.warmup(jax.random.PRNGKey(seed), extra_fields=("num_steps",), collect_warmup=True, **data)
        jax.block_until_ready(mcmc.post_warmup_state)
        warmup_wall, warmup_compile = time.perf_counter() - start, clock.seconds()
        warmup_gradients = int(np.sum(mcmc.get_extra_fields()["num_steps"]))

        clock.reset()
        start = time.perf_counter()
        mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps", "diverging"), **data)
        samples = jax.block_until_ready(mcmc.get_samples(group_by_chain=True))
        extra = jax.block_until_ready(mcmc.get_extra_fields(group_by_chain=True))
        sampling_wall, sampling_compile = time.perf_counter() - start, clock.seconds()

        timings = Timings(
            compile_s=warmup_compile + sampling_compile,
            warmup_s=warmup_wall - warmup_compile,
            sampling_s=sampling_wall - sampling_compile,
            source="wall of MCMC.warmup and MCMC.run after block_until_ready, less jax.monitoring compile spans",
            compile_cached=clock.all_cached,
            detail={"warmup_wall_s": warmup_wall, "sampling_wall_s": sampling_wall},
        )
        stats = SamplerStats(
            n_leapfrog=np.asarray(extra["num_steps"], dtype=np.int64),
            divergent=np.asarray(extra["diverging"], dtype=bool),
            warmup_gradients=warmup_gradients,
            step_size=[float(s) for s in np.atleast_1d(mcmc.last_state.adapt_state.step_size)],
        )
        info = {
            "numpyro": metadata.version("numpyro"),
            "jax": jax.__version__,
            "jaxlib": metadata.version("jaxlib"),
            "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.local_devices()[: config.chains]],
            "chain_method": "parallel",
            "dtype": "float64" if jax.config.jax_enable_x64 else "float32",
        }
        draws = {name: np.asarray(value, dtype=np.float64) for name, value in samples.items()}
        return SampleResult(draws, timings, stats, info)
