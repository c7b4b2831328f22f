"""Named suites: which models, engines and settings a campaign runs unless the command line says otherwise."""

from typing import Literal, NotRequired, TypedDict

from stanjax.runner.core.engine_registry import CPU_PAIR, GPU_SAMPLERS


class Suite(TypedDict):
    """One suite's settings; the optional keys fall back where they are read (cpu, no minimum run length, no
    calibration)."""

    models: list[str] | Literal["all"]
    engines: tuple[str, ...]
    sizes: list[str]
    chains: int
    warmup: int
    draws: int
    repeats: int
    device: NotRequired[str]
    min_sampler_s: NotRequired[float]
    calibrate: NotRequired[bool]


QUICK_MODELS = [
    "eight_schools-eight_schools_noncentered",
    "covtype_synth-logistic_regression",
    "tennis_synth-bradley_terry_hierarchical",
]

SUITES: dict[str, Suite] = {
    # The README's `make report`: the first three models at their small size, Stan and NumPyro on CPU,
    # 5 paired blocks (the fewest that give a ratio its 90 % interval); a few minutes on 2 cores.
    "quick": {
        "models": QUICK_MODELS,
        "engines": CPU_PAIR,
        "sizes": ["small"],
        "chains": 4,
        "warmup": 1000,
        "draws": 1000,
        "repeats": 5,
        # Where a pairing's shorter side would sample for less, both draw more (runner.measure.run_length); a calibration
        # first (runner.measure.gradient_cost), so the report can tell two machines of one name apart.
        "min_sampler_s": 2.0,
        "calibrate": True,
    },
    # The real comparison on a CPU box: every model at its default size, Stan and NumPyro, 5 paired blocks.
    "full": {
        "models": "all",
        "engines": CPU_PAIR,
        "sizes": ["default"],
        "chains": 4,
        "warmup": 1000,
        "draws": 1000,
        "repeats": 5,
        # Where a pairing's shorter side would sample for less, both draw more (runner.measure.run_length); a calibration
        # first (runner.measure.gradient_cost), so the report can tell two machines of one name apart.
        "min_sampler_s": 2.0,
        "calibrate": True,
    },
    # `stanjax nightly`: the quick suite with 5 repeats, enough for a Mann–Whitney test to reach p < 0.05.
    "nightly": {
        "models": QUICK_MODELS,
        "engines": CPU_PAIR,
        "sizes": ["small"],
        "chains": 4,
        "warmup": 1000,
        "draws": 1000,
        "repeats": 5,
        # Where a pairing's shorter side would sample for less, both draw more (runner.measure.run_length); a calibration
        # first (runner.measure.gradient_cost), so the report can tell two machines of one name apart.
        "min_sampler_s": 2.0,
        "calibrate": True,
    },
    # Smoke test used by the test suite: tiny data, one repeat, enough draws for R-hat <= 1.01 most of the time.
    "tiny": {
        "models": "all",
        "engines": CPU_PAIR,
        "sizes": ["tiny"],
        "chains": 4,
        "warmup": 500,
        "draws": 1000,
        "repeats": 1,
    },
    # On a GPU box: Stan on all its CPU cores against every JAX engine on the GPU (float32), default and large
    # sizes, one repeat each to fit a lent GPU's time.
    "gpu": {
        "models": "all",
        "engines": ("stan", *GPU_SAMPLERS),
        "sizes": ["default", "large"],
        "device": "gpu",
        "chains": 4,
        "warmup": 1000,
        "draws": 1000,
        "repeats": 1,
    },
}
