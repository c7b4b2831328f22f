"""Softmax (multinomial logistic) regression on MNIST-shaped synthetic images (the TFP-on-JAX MNIST example).

2,000 draws per chain at default and large size (``min_draws``), where the suites take 1,000: with 7,850
parameters the largest R-hat of a converged run is the largest of 7,850 noisy estimates. At 4 chains x 1,000 draws
(the 2-core Xeon's default campaign, results/xeon-2core/full-default-20261125, blocks 1-3) every Stan run passed
(max R-hat 1.0078-1.0097) and two of three NumPyro runs failed the 1.01 gate (1.0116, 1.0103), while every run had
min bulk ESS 5,295-6,023 and passed the reference gate (largest z 3.8-4.5 over 15,700 means and sds, limit 5):
one valid block of three, lost to the largest of many noisy R-hats, not to a chain apart. R-hat's excess over 1
falls about as 1 / draws, so twice the draws put the largest near 1.005: the advice for R-hat above 1.01 (run
longer), the same on both engines.
"""

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
    min_draws={"default": 2_000, "large": 2_000},
)
