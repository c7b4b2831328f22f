"""Bayesian logistic regression on a synthetic covertype-like design (Edward2 / NumPyro COVTYPE benchmark shape).

The UCI covertype design has 10 continuous columns and 44 one-hot columns (4 wilderness areas, 40 soil
types); benchmarks standardise every column. This generator reproduces that structure at any N and D.
"""

import numpy as np

from models import ModelSpec, Parameter

N_CONTINUOUS = 10
N_WILDERNESS = 4


def _one_hot(rng: np.random.Generator, n_rows: int, n_levels: int) -> np.ndarray:
    weights = rng.dirichlet(np.full(n_levels, 0.7))
    levels = rng.choice(n_levels, size=n_rows, p=weights)
    return np.eye(n_levels)[levels]


def generate(seed: int, N: int, D: int) -> dict:
    """N rows, D standardised features; the intercept is the parameter ``alpha``."""
    if N < 1 or D < 1:
        raise ValueError(f"covtype_synth needs N >= 1 and D >= 1, got N={N}, D={D}")
    rng = np.random.default_rng(seed)
    n_cont = min(N_CONTINUOUS, D)
    n_wild = min(N_WILDERNESS, D - n_cont)
    n_soil = D - n_cont - n_wild
    common = rng.normal(size=(N, 1))
    blocks = [0.6 * common + 0.8 * rng.normal(size=(N, n_cont))]
    blocks += [_one_hot(rng, N, k) for k in (n_wild, n_soil) if k > 0]
    X = np.hstack(blocks)
    scale = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    alpha = -0.5
    beta = rng.normal(0.0, 2.0 / np.sqrt(D), size=D)
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(alpha + X @ beta))))
    return {"N": N, "D": D, "X": X, "y": y.astype(np.int64)}


SPEC = ModelSpec(
    id="covtype_synth-logistic_regression",
    description="Logistic regression, normal priors, standardised covertype-like features (Stan: bernoulli_logit_glm).",
    regime="data-parallel likelihood: one matrix-vector product per gradient",
    parameters=(Parameter("alpha"), Parameter("beta", ("D",))),
    sizes={
        "tiny": {"N": 200, "D": 5},
        "default": {"N": 10_000, "D": 54},
        "large": {"N": 581_012, "D": 54},  # the full covertype size used by Edward2 and NumPyro
    },
    generate=generate,
)
