"""Counts from a log-linear Poisson model with K standardised predictors: the README's worked example of
`stanjax check` and `stanjax run --model-dir` (a model folder of its own, not one of the zoo's)."""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, exact_exp


def generate(seed: int, N: int, K: int) -> dict:
    """N rows of K standard-normal predictors; log rate 0.5 + X beta with beta ~ normal(0, 0.3)."""
    if N < 1 or K < 1:
        raise SizeError(f"counts_synth needs N >= 1 and K >= 1, got N={N}, K={K}")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, K))
    beta = rng.normal(0.0, 0.3, size=K)
    y = rng.poisson(exact_exp(0.5 + X @ beta))
    return {"N": N, "K": K, "X": X, "y": y.astype(np.int64)}


SPEC = ModelSpec(
    id="counts_synth-poisson_regression",
    description="Poisson regression with a log link, normal priors (Stan: poisson_log_glm).",
    parameters=(Parameter("alpha"), Parameter("beta", ("K",))),
    sizes={
        "tiny": {"N": 100, "K": 3},
        "small": {"N": 1_000, "K": 5},
        "default": {"N": 10_000, "K": 10},
        "large": {"N": 100_000, "K": 20},
    },
    generate=generate,
    regime="data-parallel likelihood: one matrix-vector product per gradient",
    n_key="N",
)
