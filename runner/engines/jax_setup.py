"""Starting JAX where a placement says: platform, precision, host devices, the CPU instruction set XLA compiles
for, persistent compilation cache.

Must run before anything else in the process initialises a JAX backend (workers call it first thing)."""

from __future__ import annotations

import functools
import os

import numpy as np

from stanjax.runner.core import isa as isas
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.paths import cache_dir

PLATFORMS = {"cpu": "cpu", "gpu": "cuda"}
# float32 means float32 in every matmul: JAX's default precision on Ampere and Hopper GPUs is TF32 (10-bit
# mantissa), an ML-training trade: a log density summed over many rows loses the accuracy NUTS relies on.
MATMUL_PRECISION = "highest"

COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class CompileClock:
    """Collects jax.monitoring time spans of compilation; ``seconds()`` is the length of their union.

    Also counts persistent-cache requests and hits: ``all_cached`` is true when every XLA compilation was a hit.
    """

    def __init__(self) -> None:
        import jax.monitoring

        self.spans: list[tuple[float, float]] = []
        self.cache_requests = self.cache_hits = 0
        jax.monitoring.register_event_time_span_listener(self._record_span)
        jax.monitoring.register_event_listener(self._record_event)

    def _record_span(self, event: str, start_time: float, end_time: float, **_) -> None:
        if event in COMPILE_EVENTS:
            self.spans.append((start_time, end_time))

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


def start_jax(placement: Placement, chains: int):
    """The configured ``jax`` module; raises when the device the placement names is not the one JAX got, or when
    an ISA limit is asked for after XLA has started (its flags are read once, at start-up)."""
    import sys

    # Before numpyro imports jax: jax reads JAX_PLATFORMS once, at import. Set after, the worker of a CPU run on a
    # box with a GPU started JAX on the GPU (the borrowed H200, 2026-11-26); the config update below covers a jax
    # that something imported before this call.
    os.environ["JAX_PLATFORMS"] = PLATFORMS[placement.device]
    import numpyro

    limit = isas.xla_flag(placement.isa)
    if limit and limit not in os.environ.get("XLA_FLAGS", "").split():
        bridge = sys.modules.get("jax._src.xla_bridge")
        if bridge is not None and bridge.backends_are_initialized():
            raise RuntimeError(f"XLA started before {limit} was set, and reads its flags once: start JAX afresh")
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {limit}".strip()
    if placement.device == "cpu" and placement.chain_method == "parallel":
        numpyro.set_host_device_count(chains)  # one CPU device per chain
    numpyro.enable_x64(placement.precision == "float64")
    import jax

    jax.config.update("jax_platforms", PLATFORMS[placement.device])
    jax.config.update("jax_default_matmul_precision", MATMUL_PRECISION)
    jax.config.update("jax_compilation_cache_dir", str(cache_dir() / "jax"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if jax.default_backend() != placement.device:
        raise RuntimeError(f"asked for {placement.device}, JAX started on {jax.default_backend()}")
    if placement.chain_method == "parallel" and jax.local_device_count() < chains:
        raise RuntimeError(
            f"JAX sees {jax.local_device_count()} {placement.device} devices, {chains} parallel chains need one each"
        )
    return jax


def device_info(jax, placement: Placement, chains: int) -> dict:
    """The record's view of where a JAX run went."""
    used = jax.local_devices()[: chains if placement.chain_method == "parallel" else 1]
    return {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in used],
        "device_kind": used[0].device_kind,
        "chain_method": placement.chain_method,
        "dtype": "float64" if jax.config.jax_enable_x64 else "float32",
        **isas.info(placement.isa),
        # The ISA limit XLA started with (its flags are read once): what took effect, not only what was asked.
        "xla_isa_flag": next(
            (flag for flag in os.environ.get("XLA_FLAGS", "").split() if flag.startswith("--xla_cpu_max_isa=")),
            "none (XLA's default: the host's ISA)",
        ),
        "matmul_precision": jax.config.jax_default_matmul_precision,
        # XLA's CPU thread pool is as large as the worker's cores (its affinity mask), shared by the chains.
        "cpu_threads": len(os.sched_getaffinity(0)),
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "OpenBLAS's default"),
    }


def split_data(data: dict) -> tuple[dict, dict]:
    """(sizes, arrays): integer scalars and other non-array values are bound to the model (a plate's length must
    be a Python int); the rest are arguments of the compiled functions (NumPyro's ``jit_model_args``), never
    constants folded into the program, which at 581,012 rows cost XLA 10-14 s of compilation."""
    sizes: dict[str, object] = {}
    arrays: dict[str, object] = {}
    for name, value in data.items():
        is_size = isinstance(value, (bool, int, np.integer, str)) or value is None
        (sizes if is_size else arrays)[name] = value
    return sizes, arrays


def model_functions(jax, model, data: dict, config: RunConfig, rng_key):
    """As :func:`initial_points`, with the data's arrays as arguments: (points, potential_of, constrain_of,
    arrays), where ``potential_of(arrays)`` and ``constrain_of(arrays)`` give the potential and constraining
    functions for the arrays handed in (traced, inside a jitted function)."""
    from numpyro.infer import init_to_uniform
    from numpyro.infer.util import initialize_model

    sizes, arrays = split_data(data)
    ids = config.superchain_ids()
    init, potential_of, constrain_of, _ = initialize_model(
        jax.random.split(rng_key, config.superchains or config.chains),
        functools.partial(model, **sizes),
        init_strategy=init_to_uniform(radius=config.init_radius),
        model_kwargs=arrays,
        dynamic_args=True,
    )
    points = init.z if ids is None else jax.tree.map(lambda starts: starts[jax.numpy.asarray(ids)], init.z)
    return points, lambda a: potential_of(**a), lambda a: constrain_of(**a), arrays


def initial_points(jax, model, data: dict, config: RunConfig, rng_key):
    """NumPyro's unconstrained initial points (uniform within ``config.init_radius``, as Stan's) for every chain,
    with the model's potential and constraining functions. The chains of a superchain (``config.superchain_ids``)
    share one point, as nested R-hat requires; without superchains each chain draws its own."""
    from numpyro.infer import init_to_uniform
    from numpyro.infer.util import initialize_model

    ids = config.superchain_ids()
    init, potential_fn, postprocess_fn, _ = initialize_model(
        jax.random.split(rng_key, config.superchains or config.chains),
        model,
        init_strategy=init_to_uniform(radius=config.init_radius),
        model_kwargs=data,
        dynamic_args=False,
    )
    points = init.z if ids is None else jax.tree.map(lambda starts: starts[jax.numpy.asarray(ids)], init.z)
    return points, potential_fn, postprocess_fn
