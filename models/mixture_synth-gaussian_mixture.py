"""Marginalised 4-component Gaussian mixture fitted to draws of rlouf's 2020 benchmark mixture."""

import numpy as np

from models import ModelSpec, Parameter

# The target of rlouf's "1e9 random-walk Metropolis samples in 25 s" benchmark (also fixed-gaussian_mixture_target).
LOCATIONS = (-2.0, 0.0, 3.2, 2.5)
SCALES = (1.2, 1.0, 5.0, 2.8)
WEIGHTS = (0.2, 0.3, 0.1, 0.4)


def generate(seed: int, N: int) -> dict:
    """N draws from the benchmark mixture; the model fits K = 4 components to them."""
    if N < 2:
        raise ValueError(f"mixture_synth needs N >= 2, got N={N}")
    rng = np.random.default_rng(seed)
    component = rng.choice(len(WEIGHTS), size=N, p=WEIGHTS)
    y = rng.normal(np.take(LOCATIONS, component), np.take(SCALES, component))
    return {"N": N, "K": len(WEIGHTS), "y": y}


SPEC = ModelSpec(
    id="mixture_synth-gaussian_mixture",
    description="Gaussian mixture with the component labels summed out; ordered locations identify the labels.",
    regime="marginalised discrete latents: N x K log-sum-exp terms per gradient",
    parameters=(Parameter("w", ("K",)), Parameter("mu", ("K",)), Parameter("sigma", ("K",))),
    sizes={"tiny": {"N": 500}, "small": {"N": 2_000}, "default": {"N": 20_000}, "large": {"N": 1_000_000}},
    generate=generate,
    different_transforms=("w",),  # simplex: Stan >= 2.36 maps it through an isometric log ratio, NumPyro stick-breaks
)
