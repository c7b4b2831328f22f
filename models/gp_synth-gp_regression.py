"""Exact Gaussian-process regression with a squared-exponential kernel on synthetic 1-D data."""

import math

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, libm


def generate(seed: int, N: int) -> dict:
    """N noisy observations of a smooth function at sorted random inputs on [-5, 5]."""
    if N < 2:
        raise SizeError(f"gp_synth needs N >= 2, got N={N}")
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-5.0, 5.0, size=N))
    f = libm(math.sin, 1.3 * x) + 0.5 * libm(math.cos, 0.4 * x)  # libm's: NumPy's differ on AVX-512
    return {"N": N, "x": x, "y": f + 0.3 * rng.normal(size=N)}


SPEC = ModelSpec(
    id="gp_synth-gp_regression",
    title="GP regression",
    description="GP regression, marginal likelihood through a Cholesky factor; length scale, amplitude, noise.",
    regime="dense linear algebra: O(N^3) Cholesky per gradient",
    parameters=(Parameter("rho"), Parameter("alpha"), Parameter("sigma")),
    sizes={"tiny": {"N": 20}, "small": {"N": 100}, "default": {"N": 500}, "large": {"N": 4_000}},
    generate=generate,
    n_key="N",
)
