"""Stochastic volatility: latent AR(1) log-volatility behind T daily returns (Stan User's Guide, Kim et al. 1998).

The priors on mu and sigma are normal and half-normal, not the User's Guide's Cauchys: Cauchy prior draws overflow
exp(h / 2), which breaks prior-predictive checks (and broke the density test while it drew prior points).
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, exact_exp


def generate(seed: int, T: int) -> dict:
    """T mean-zero returns whose log-variance follows a stationary AR(1) (mu -1, phi 0.95, sigma 0.25)."""
    if T < 2:
        raise SizeError(f"sv_synth needs T >= 2, got T={T}")
    rng = np.random.default_rng(seed)
    mu, phi, sigma = -1.0, 0.95, 0.25
    h = np.empty(T)
    h[0] = mu + sigma / np.sqrt(1 - phi**2) * rng.normal()
    for t in range(1, T):
        h[t] = mu + phi * (h[t - 1] - mu) + sigma * rng.normal()
    return {"T": T, "y": exact_exp(h / 2) * rng.normal(size=T)}


SPEC = ModelSpec(
    id="sv_synth-stochastic_volatility",
    title="Stochastic volatility",
    description="Stochastic volatility, non-centred AR(1) log-volatility; mean, persistence, innovation scale.",
    regime="sequential: a T-step recursion per gradient (Stan's loop vs a JAX scan)",
    parameters=(Parameter("mu"), Parameter("phi"), Parameter("sigma"), Parameter("h_std", ("T",))),
    sizes={"tiny": {"T": 300}, "small": {"T": 1_000}, "default": {"T": 3_000}, "large": {"T": 20_000}},
    generate=generate,
    n_key="T",
)
