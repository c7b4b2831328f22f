"""Marginalised 4-component Gaussian mixture: the data-driven counterpart of rlouf's fixed mixture target.

The data come from four well-separated components (rlouf's weights, locations spread apart). rlouf's own
components overlap (locations 2.5 and 3.2, scales 2.8 and 5): fitted to draws of that mixture, the posterior
is multimodal (which overlapping component is the wide one), and neither Stan nor NumPyro reached R-hat 1.01
at N = 2000 (min ESS < 10 of 4000 draws), so no run would pass the validity gates.
"""

import numpy as np

from models import ModelSpec, Parameter, SizeError

LOCATIONS = (-5.0, -1.0, 3.0, 7.0)
SCALES = (1.0, 1.2, 0.8, 1.5)
WEIGHTS = (0.2, 0.3, 0.1, 0.4)


def generate(seed: int, N: int) -> dict:
    """N draws from the data mixture; the model fits K = 4 components to them."""
    if N < 2:
        raise SizeError(f"mixture_synth needs N >= 2, got N={N}")
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
    n_key="N",
    different_transforms=("w",),  # simplex: Stan >= 2.36 maps it through an isometric log ratio, NumPyro stick-breaks
)
