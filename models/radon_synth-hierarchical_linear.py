"""Varying-intercept, varying-slope multilevel linear regression on synthetic radon-style data."""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError


def generate(seed: int, N: int, J: int) -> dict:
    """N homes in J counties of uneven size; x = 1 when measured on the first floor, y = log radon."""
    if N < J or J < 2:
        raise SizeError(f"radon_synth needs J >= 2 counties and N >= J homes, got N={N}, J={J}")
    rng = np.random.default_rng(seed)
    alpha = 1.5 + 0.3 * rng.normal(size=J)
    beta = -0.6 + 0.2 * rng.normal(size=J)
    weights = rng.lognormal(0.0, 1.0, size=J)
    county = np.concatenate([np.arange(J), rng.choice(J, size=N - J, p=weights / weights.sum())])
    x = (rng.random(N) < 0.2).astype(np.float64)
    y = alpha[county] + beta[county] * x + 0.75 * rng.normal(size=N)
    return {"N": N, "J": J, "county": county.astype(np.int64) + 1, "x": x, "y": y}


SPEC = ModelSpec(
    id="radon_synth-hierarchical_linear",
    title="Radon, multilevel linear",
    description="Multilevel linear regression: county intercepts and floor slopes, non-centred.",
    regime="classic multilevel model: gathers by group index, normal likelihood",
    parameters=(
        Parameter("mu_alpha"),
        Parameter("sigma_alpha"),
        Parameter("alpha_raw", ("J",)),
        Parameter("mu_beta"),
        Parameter("sigma_beta"),
        Parameter("beta_raw", ("J",)),
        Parameter("sigma_y"),
    ),
    sizes={
        "tiny": {"N": 200, "J": 10},
        "small": {"N": 919, "J": 85},  # the size of Gelman & Hill's Minnesota radon data
        "default": {"N": 12_000, "J": 400},
        "large": {"N": 200_000, "J": 3_000},
    },
    generate=generate,
    n_key="N",
)
