"""Softmax (multinomial logistic) regression on MNIST-shaped synthetic images (the TFP-on-JAX MNIST example)."""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError


def generate(seed: int, N: int, D: int, K: int) -> dict:
    """N "images" of D pixel intensities in [0, 1] from K classes: a sparse prototype per class, jittered."""
    if N < 2 or D < 1 or K < 2:
        raise SizeError(f"mnist_synth needs N >= 2, D >= 1, K >= 2, got N={N}, D={D}, K={K}")
    rng = np.random.default_rng(seed)
    prototypes = rng.uniform(size=(K, D)) * (rng.uniform(size=(K, D)) < 0.3)  # ~70% dark pixels per class
    labels = rng.integers(K, size=N)
    noisy = prototypes[labels] + rng.normal(0.0, 0.3, size=(N, D))
    x = np.clip(noisy, 0.0, 1.0) * (rng.uniform(size=(N, D)) < 0.8)  # 20% pixels dropped per image
    return {"N": N, "D": D, "K": K, "x": x, "y": (labels + 1).astype(np.int64)}


SPEC = ModelSpec(
    id="mnist_synth-multinomial_logistic_regression",
    title="Softmax regression (MNIST-like)",
    description="Softmax regression, one intercept and one coefficient column per class, normal(0, 1) priors.",
    regime="wide dense GLM: an N x D by D x K matrix product per gradient, D x K coefficients",
    parameters=(Parameter("alpha", ("K",)), Parameter("beta", ("D", "K"))),
    sizes={
        "tiny": {"N": 200, "D": 20, "K": 10},
        "small": {"N": 1_000, "D": 100, "K": 10},
        "default": {"N": 1_000, "D": 784, "K": 10},  # MNIST's 28 x 28 pixels, fewer images
        "large": {"N": 60_000, "D": 784, "K": 10},  # MNIST's training set
    },
    generate=generate,
    n_key="N",
)
