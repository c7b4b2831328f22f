"""Bayesian logistic regression on a synthetic covertype-like design (Edward2 / NumPyro COVTYPE benchmark shape).

The UCI covertype design has 10 correlated continuous columns and 44 sparse binary columns; benchmarks
standardise every column. Here the binary columns are independent indicators with skewed rates (1 % to
~50 %) rather than covertype's two one-hot groups: one-hot groups plus an intercept are exactly collinear,
which leaves a direction identified by the prior alone and makes NUTS take very long trajectories, and
categories seen a handful of times become standardised values near 70. Neither is a property a timing
benchmark should hinge on.
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError

N_CONTINUOUS = 10
MIN_RATE = 0.01


def generate(seed: int, N: int, D: int) -> dict:
    """N rows, D standardised features; the intercept is the parameter ``alpha``."""
    if N < 1 or D < 1:
        raise SizeError(f"covtype_synth needs N >= 1 and D >= 1, got N={N}, D={D}")
    rng = np.random.default_rng(seed)
    n_cont = min(N_CONTINUOUS, D)
    common = rng.normal(size=(N, 1))
    continuous = 0.6 * common + 0.8 * rng.normal(size=(N, n_cont))
    rates = np.clip(rng.beta(0.6, 3.0, size=D - n_cont), MIN_RATE, 0.5)
    binary = (rng.random(size=(N, D - n_cont)) < rates).astype(np.float64)
    X = np.hstack([continuous, binary])
    scale = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    alpha = -0.5
    beta = rng.normal(0.0, 2.0 / np.sqrt(D), size=D)
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(alpha + X @ beta))))
    return {"N": N, "D": D, "X": X, "y": y.astype(np.int64)}


SPEC = ModelSpec(
    id="covtype_synth-logistic_regression",
    title="Logistic regression (covertype-like)",
    description="Logistic regression, normal priors, standardised covertype-like features (Stan: bernoulli_logit_glm).",
    regime="data-parallel likelihood: one matrix-vector product per gradient",
    parameters=(Parameter("alpha"), Parameter("beta", ("D",))),
    sizes={
        "tiny": {"N": 200, "D": 5},
        "small": {"N": 2_000, "D": 20},
        "default": {"N": 10_000, "D": 54},
        "large": {"N": 581_012, "D": 54},  # the full covertype size used by Edward2 and NumPyro
    },
    generate=generate,
    n_key="N",
    studies=("data-size", "chains", "devices", "roofline"),
    claims=("tran_hoffman",),
    shard_rows=("X", "y"),
    shard_sizes={"tiny": {"N": 800, "D": 5}, "cpu": {"N": 80_000, "D": 54}, "gpu": {"N": 581_008, "D": 54}},
)
